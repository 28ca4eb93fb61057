"""What a decoding run reports, round by round: built for a UI to consume as it is.

Every token a user sees carries its provenance (:class:`TokenSource`): a draft token the
target accepted, a token the target produced itself (the bonus after an accepted path, or the
correction after a rejection), or a draft token the target rejected (shown, then struck out).
The remote engine (``app/engine``) adds a fourth: a token generated while the verifier was
unreachable, shown as unverified until the verifier has checked it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class TokenSource(Enum):
    DRAFT_ACCEPTED = "accepted"  # proposed by the draft, confirmed by the target
    TARGET = "target"  # sampled from the target (bonus or correction)
    DRAFT_REJECTED = "rejected"  # proposed by the draft, rejected (not part of the output)
    OFFLINE = "offline"  # generated without the verifier (draft or local model alone), not yet verified


@dataclass(frozen=True)
class TokenEvent:
    token: int
    source: TokenSource


@dataclass(frozen=True)
class RoundEvent:
    """One draft-verify round."""

    index: int  # 0-based round number
    accepted: tuple[int, ...]  # draft tokens the target accepted, in order
    next_token: int  # the target's own token after them
    rejected: tuple[int, ...]  # the draft's preferred continuation that the target rejected
    accepted_depths: tuple[int, ...]  # depths (1-based) of the accepted nodes
    proposed: int  # drafted nodes verified this round
    draft_s: float  # wall time spent drafting
    verify_s: float  # wall time of the target pass plus acceptance and cache compaction
    output: tuple[int, ...]  # tokens this round adds to the output (after stop handling)

    @property
    def proposed_depth(self) -> int:
        """Deepest drafted position that had a chance this round (accepted path + rejected chain)."""
        return len(self.accepted) + len(self.rejected) if self.proposed else 0

    @property
    def tokens(self) -> tuple[int, ...]:
        return (*self.accepted, self.next_token)

    def token_events(self) -> list[TokenEvent]:
        """The round as a UI shows it: accepted, rejected (struck out), then the target's token."""
        events = [TokenEvent(t, TokenSource.DRAFT_ACCEPTED) for t in self.accepted]
        events += [TokenEvent(t, TokenSource.DRAFT_REJECTED) for t in self.rejected]
        events.append(TokenEvent(self.next_token, TokenSource.TARGET))
        return events
