"""What the target and the draft hold of a local conversation, and cutting both back for a new turn.

Each turn's prompt is the whole conversation rendered by the target's chat template. After a
turn the target's KV cache holds the tokens it committed: the prompt and the answer, less the
answer's last token (the final root, never run) and plus whatever a stop cut off the end of the
last round. The drafter has observed exactly those. The next prompt (the same conversation, the
answer and a new user message) starts with most of them: re-tokenising the answer may split it
differently, and an edited or regenerated message diverges earlier. So each turn keeps the
**longest common prefix** of what is held and the new prompt, less at least its last token (whose
logits give the first new token), and runs only the rest.

Cut back, not reset: the target's session is truncated (its KV cropped) and a
:class:`~drafts.drafters.base.Rewindable` drafter (the trained drafts) truncates its caches to
the same length. A drafter that cannot be cut back is started afresh (``begin``) and observes
only the tokens from the cut on: the answer stays the target's (it verifies every token), only
that drafter's view of the earlier turns is lost. Prompt lookup holds no state, so for it this
loses nothing; the trained drafts all cut back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from drafts.drafters.base import Drafter, Rewindable
from drafts.target.chat import common_prefix
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession


@dataclass
class CachedConversation:
    """The target session of one conversation and the tokens whose keys/values it holds."""

    session: TargetSession = field(default_factory=TargetSession)
    tokens: list[int] = field(default_factory=list)  # len == session.length once a turn has ended
    reused: int = 0  # prompt tokens the last turn kept from the one before (not run again)

    def cut_back(self, prompt: Sequence[int], drafter: Drafter | None) -> TargetSession:
        """Keep the longest common prefix with ``prompt`` (all but its last token at most)."""
        keep = min(common_prefix(self.tokens, prompt), len(prompt) - 1)
        self.session.truncate(keep)
        del self.tokens[keep:]
        if drafter is not None:
            rewind(drafter, keep, prompt)
        self.reused = keep
        return self.session

    def record(self, ran: Sequence[int]) -> None:
        """After a round: the session holds the first ``session.length`` tokens of ``ran``
        (the prompt, then every round's accepted tokens and the target's own)."""
        self.tokens = list(ran[: self.session.length])

    def forget(self, runner: TargetRunner) -> None:
        """Start over (after a generation that failed midway: the cache may hold a half round)."""
        self.session, self.tokens, self.reused = runner.new_session(), [], 0


def rewind(drafter: Drafter, keep: int, prompt: Sequence[int]) -> None:
    """Cut ``drafter`` back to ``keep`` tokens, or restart it (it then observes the prompt from the cut on)."""
    if isinstance(drafter, Rewindable):
        try:
            drafter.truncate(keep)
            return
        except NotImplementedError:  # a trained draft whose model does not implement truncate
            pass
    drafter.begin(list(prompt))
