"""What the status bar and the stats panel show, folded from the engine's events (no widgets here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.engine.events import (
    EngineEvent,
    Finished,
    GenerationStats,
    LinkChanged,
    LinkLost,
    LinkRestored,
    LinkState,
    Reconnecting,
    StatsUpdated,
)

HISTORY = 120  # points kept for the sparklines (StatsUpdated comes about twice a second)


@dataclass
class LiveStats:
    """The link as last reported, and the figures of the answer being written (or the last one)."""

    link: LinkState = LinkState.CONNECTING
    rtt_ms: float | None = None
    reason: str = ""
    latest: StatsUpdated | None = None
    finished: GenerationStats | None = None
    tokens_per_s: list[float] = field(default_factory=list)
    tau: list[float] = field(default_factory=list)
    generating: bool = False

    def start_answer(self) -> None:
        self.latest, self.finished, self.generating = None, None, True
        self.tokens_per_s.clear()
        self.tau.clear()

    def apply(self, event: EngineEvent) -> bool:
        """Fold ``event`` in; whether anything shown changed."""
        if isinstance(event, LinkChanged):
            self.link, self.reason = event.state, event.reason
            self.rtt_ms = event.rtt_ms if event.rtt_ms is not None else self.rtt_ms
        elif isinstance(event, LinkLost):
            self.link, self.reason = LinkState.OFFLINE, event.reason
        elif isinstance(event, Reconnecting):
            self.link, self.reason = LinkState.RECONNECTING, f"attempt {event.attempt}"
        elif isinstance(event, LinkRestored):
            self.link, self.reason = LinkState.ONLINE, ""
        elif isinstance(event, StatsUpdated):
            self._record(event)
        elif isinstance(event, Finished):
            self.finished, self.generating = event.stats, False
            self.rtt_ms = event.stats.rtt_ms if event.stats.rtt_ms is not None else self.rtt_ms
        else:
            return False
        return True

    def _record(self, event: StatsUpdated) -> None:
        self.latest = event
        self.rtt_ms = event.rtt_ms if event.rtt_ms is not None else self.rtt_ms
        self.tokens_per_s.append(event.tokens_per_s)
        self.tau.append(event.tau)
        del self.tokens_per_s[:-HISTORY], self.tau[:-HISTORY]

    @property
    def bytes_per_token(self) -> float | None:
        if self.latest is None:
            return None
        return self.latest.bytes_up_per_token + self.latest.bytes_down_per_token

    @property
    def tokens_per_s_now(self) -> float | None:
        if self.finished is not None:
            return self.finished.tokens_per_s
        return self.latest.tokens_per_s if self.latest is not None else None
