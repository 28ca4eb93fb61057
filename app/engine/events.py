"""What the remote engine tells a UI, as it happens: past-tense events, in order.

Every token carries its provenance (:class:`~drafts.decoding.events.TokenSource`)::

    DRAFT_ACCEPTED  drafted on this machine, confirmed by the verifier
    TARGET          the target's own token (the bonus after an accepted chain, or a correction)
    DRAFT_REJECTED  drafted, refused by the verifier: never part of the output (shown struck out)
    OFFLINE         generated while the verifier was unreachable: shown, but unverified

The output is a list of positions (0 = the first generated token). :class:`TokenGenerated`
always appends at the next position. :class:`Repaired` replaces an offline span once the verifier
is back: the offline tokens it confirmed (``kept``), then the target's own token (the correction
at the first rejection, or the bonus after the span). So after :class:`Finished` the output holds
DRAFT_ACCEPTED and TARGET tokens only, unless it ended offline (``Finished.stats.unverified``).
:class:`Shown` folds the events into what a UI displays.

Link events frame the offline spells: :class:`LinkLost`, then :class:`Reconnecting` per attempt,
then :class:`LinkRestored` (the session resumed, or a new one with the history replayed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from app.engine.proposal_tally import ProposalStats
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason


@dataclass(frozen=True)
class TokenGenerated:
    """A token appended to the output at ``position``."""

    position: int
    token: int
    source: TokenSource  # DRAFT_ACCEPTED, TARGET or OFFLINE
    text: str = ""  # this token's text, decoded incrementally (UTF-8 safe: "" while a character is incomplete)
    char_start: int = 0  # where ``text`` starts in the answer's text


@dataclass(frozen=True)
class DraftRejected:
    """Drafted tokens the verifier refused; the first was proposed for output ``position``."""

    position: int
    tokens: tuple[int, ...]


@dataclass(frozen=True)
class Repaired:
    """The offline tokens at output positions [start, end) were verified and replaced by ``tokens``."""

    start: int
    end: int
    tokens: tuple[int, ...]  # the confirmed replacement; may be longer than the span (the bonus token)
    sources: tuple[TokenSource, ...]  # one per token: DRAFT_ACCEPTED or TARGET
    kept: int  # leading offline tokens that survived verification (tokens[:kept] == the span's first kept)
    texts: tuple[str, ...] = ()  # one text per token of ``tokens`` (UTF-8 safe, as TokenGenerated.text)
    char_start: int = 0  # the replaced text is answer_text[char_start:char_end] ...
    char_end: int = 0  # ... and becomes "".join(texts)

    @property
    def replaced(self) -> int:
        """Offline tokens the verifier refused (or that followed a refused one)."""
        return self.end - self.start - self.kept


@dataclass(frozen=True)
class LinkLost:
    """The verifier became unreachable; generation goes on offline with ``continuing_with``."""

    reason: str
    continuing_with: str  # "draft" (the draft alone) or "gguf:<file name>" (a local model)


@dataclass(frozen=True)
class Reconnecting:
    """Reconnection attempt ``attempt`` starts after ``delay_s`` of backoff."""

    attempt: int
    delay_s: float


@dataclass(frozen=True)
class LinkRestored:
    """The verifier is back: the session was resumed, or a new one got the history replayed."""

    resumed: bool
    down_s: float  # from LinkLost to now
    replayed: int  # tokens prefilled again into a new session (0 when resumed)


@dataclass(frozen=True)
class GenerationStats:
    """What a generation cost and how it went."""

    new_tokens: int
    accepted: int  # output tokens drafted here and confirmed (offline ones that survived included)
    target: int  # output tokens the target chose itself
    unverified: int  # output tokens still offline when the generation ended
    offline_tokens: int  # tokens generated offline in all, shown as OFFLINE
    kept_after_repair: int  # of those, confirmed by the verifier
    round_trips: int  # waits on the verifier: requests sent with none in flight (pipelined ones share one)
    verify_rounds: int  # target forwards over drafted chains
    bytes_up: int  # frames sent, as the socket sees them (websocket headers excluded)
    bytes_down: int
    wall_s: float
    ttft_s: float | None  # until the first token was shown
    longest_pause_s: float  # the longest gap between two tokens shown (offline spells included)
    mean_gamma: float  # drafted tokens per verified chain
    drafted_ahead: int  # chains sent straight from the tokens drafted while the previous one was verified
    rtt_ms: float | None  # the last smoothed round trip, server time excluded
    prefill_tokens: int = 0  # prompt tokens sent to the verifier (a chat's later turns: only the new ones)
    bytes_down_to_first_token: int = 0  # bytes received before the first token was shown
    requests: int = 0  # requests answered by the verifier (prefill chunks, verify, rewind, generate)
    proposals: ProposalStats | None = None  # a speculative stream's proposals (app.engine.proposal_tally)
    kept_after_resync: int = 0  # offline tokens after a rejection, confirmed later (app.engine.resync_round)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.wall_s if self.wall_s > 0 else 0.0


@dataclass(frozen=True)
class Finished:
    """The generation is over; ``tokens`` is its output."""

    tokens: tuple[int, ...]
    stop: StopReason | None  # None: it ended offline, waiting for a verifier that did not come back
    stats: GenerationStats
    text: str = ""  # the answer's text (the decoded ``tokens``)


class LinkState(Enum):
    """What the status bar shows; a remote engine reports every change, idle or generating."""

    CONNECTING = "connecting"  # the first connection is being made
    ONLINE = "online"
    DEGRADED = "degraded"  # connected, but the round trip is slow (over LinkConfig's degraded threshold)
    OFFLINE = "offline"  # the verifier is unreachable; generation goes on locally, unverified
    RECONNECTING = "reconnecting"  # an attempt to reach it again is under way
    LOCAL = "local"  # no verifier by design (--local): the target runs on this device


@dataclass(frozen=True)
class LinkChanged:
    """The link's state changed (emitted at any time, not only during a generation)."""

    state: LinkState
    rtt_ms: float | None = None  # smoothed round trip, when known
    reason: str = ""  # why it went down, or what is being tried


@dataclass(frozen=True)
class StatsUpdated:
    """Rolling figures during a generation (about twice a second, and once before Finished)."""

    tau: float  # mean tokens confirmed per verify round (accepted + the target's own)
    acceptance_rate: float  # accepted drafted tokens / drafted tokens sent for verification
    acceptance_by_depth: tuple[float, ...]  # P(accepted) of the token drafted at depth 1, 2, ...
    rtt_ms: float | None
    tokens_per_s: float  # shown tokens / wall time of this generation so far
    round_trips: int  # waits on the verifier in this generation (GenerationStats.round_trips)
    round_trips_per_100: float  # round trips per 100 output tokens
    bytes_up_per_token: float
    bytes_down_per_token: float
    draft_ms: float  # mean per round
    verify_ms: float  # mean per round, as the client sees it (round trip included when remote)
    new_tokens: int
    offline_tokens: int  # shown as OFFLINE so far
    shape: str = ""  # the draft shape of the verified rounds ("tree 4,4,16", "chain 4"); "" before the first
    drafted_share: float = 0.0  # confirmed tokens the draft wrote (accepted drafts) / new tokens


@dataclass(frozen=True)
class OfflineBudgetReached:
    """Offline writing paused: ``budget`` unverified tokens are waiting for the verifier."""

    budget: int


EngineEvent = (
    TokenGenerated
    | DraftRejected
    | Repaired
    | LinkLost
    | Reconnecting
    | LinkRestored
    | LinkChanged
    | StatsUpdated
    | OfflineBudgetReached
    | Finished
)


@dataclass
class Shown:
    """What a UI shows after a sequence of events: the output, each token's text and provenance."""

    tokens: list[int] = field(default_factory=list)
    sources: list[TokenSource] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    rejected: list[DraftRejected] = field(default_factory=list)

    def apply(self, event: EngineEvent) -> None:
        if isinstance(event, TokenGenerated):
            assert event.position == len(self.tokens), "tokens are appended in order"
            self.tokens.append(event.token)
            self.sources.append(event.source)
            self.texts.append(event.text)
        elif isinstance(event, Repaired):
            self.tokens[event.start : event.end] = event.tokens
            self.sources[event.start : event.end] = event.sources
            self.texts[event.start : event.end] = event.texts or [""] * len(event.tokens)
        elif isinstance(event, DraftRejected):
            self.rejected.append(event)

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def spans(self) -> list[tuple[str, TokenSource]]:
        """The text as runs of one provenance each (adjacent tokens of one source merged)."""
        runs: list[tuple[str, TokenSource]] = []
        for text, source in zip(self.texts, self.sources, strict=True):
            if runs and runs[-1][1] is source:
                runs[-1] = (runs[-1][0] + text, source)
            elif text:
                runs.append((text, source))
        return runs

    def count(self, source: TokenSource) -> int:
        return sum(s is source for s in self.sources)
