"""The local engine's running figures: rolling StatsUpdated events and the final GenerationStats.

Nothing crosses a network here, so the link figures are fixed: no round-trip time, no bytes.
A "round trip" is a verify round (one target forward over a drafted chain or tree); without a
draft, one decoding step. The prefill is not counted as one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from app.engine.events import GenerationStats, StatsUpdated
from drafts.decoding.events import RoundEvent, TokenSource


@dataclass
class LocalStats:
    """Fed every round and every token shown; reads out as events."""

    start: float = field(default_factory=time.perf_counter)
    prefill_tokens: int = 0  # prompt tokens the target ran (a later turn: only those after the common prefix)
    rounds: int = 0  # verify rounds (or decoding steps), the prefill excluded
    confirmed: int = 0  # tokens those rounds confirmed: accepted drafts plus the target's own
    drafted: int = 0  # drafted tokens sent for verification
    accepted: int = 0  # ... of which accepted
    tried_at: list[int] = field(default_factory=list)  # per depth: rounds whose draft reached it
    accepted_at: list[int] = field(default_factory=list)  # ... and whose accepted path did
    draft_s: float = 0.0
    verify_s: float = 0.0
    sources: list[TokenSource] = field(default_factory=list)  # of every token shown
    first_token_s: float | None = None
    last_token_at: float | None = None
    longest_pause_s: float = 0.0
    shape: str = ""  # the draft shape of the rounds ("tree 3,4,8", "chain 4"); "" without a draft

    def add_round(self, event: RoundEvent) -> None:
        if event.index == 0:
            return  # the prefill
        self.rounds += 1
        self.confirmed += len(event.tokens)
        self.drafted += event.proposed
        self.accepted += len(event.accepted)
        self.draft_s += event.draft_s
        self.verify_s += event.verify_s
        depth = event.proposed_depth
        while len(self.tried_at) < depth:
            self.tried_at.append(0)
            self.accepted_at.append(0)
        for d in range(depth):
            self.tried_at[d] += 1
            self.accepted_at[d] += d < len(event.accepted)

    def add_token(self, source: TokenSource) -> None:
        now = time.perf_counter()
        if self.first_token_s is None:
            self.first_token_s = now - self.start
        elif self.last_token_at is not None:
            self.longest_pause_s = max(self.longest_pause_s, now - self.last_token_at)
        self.last_token_at = now
        self.sources.append(source)

    def updated(self) -> StatsUpdated:
        """The figures so far."""
        new = len(self.sources)
        return StatsUpdated(
            tau=self.confirmed / self.rounds if self.rounds else 0.0,
            acceptance_rate=self.accepted / self.drafted if self.drafted else 0.0,
            acceptance_by_depth=tuple(a / t for a, t in zip(self.accepted_at, self.tried_at, strict=True)),
            rtt_ms=None,
            tokens_per_s=new / self._elapsed() if new else 0.0,
            round_trips=self.rounds,
            round_trips_per_100=100.0 * self.rounds / new if new else 0.0,
            bytes_up_per_token=0.0,
            bytes_down_per_token=0.0,
            draft_ms=1000.0 * self.draft_s / self.rounds if self.rounds else 0.0,
            verify_ms=1000.0 * self.verify_s / self.rounds if self.rounds else 0.0,
            new_tokens=new,
            offline_tokens=0,
            shape=self.shape,
        )

    def finished(self) -> GenerationStats:
        """The whole generation's figures."""
        return GenerationStats(
            new_tokens=len(self.sources),
            accepted=self.sources.count(TokenSource.DRAFT_ACCEPTED),
            target=self.sources.count(TokenSource.TARGET),
            unverified=0,
            offline_tokens=0,
            kept_after_repair=0,
            round_trips=self.rounds,
            verify_rounds=self.rounds,
            bytes_up=0,
            bytes_down=0,
            wall_s=self._elapsed(),
            ttft_s=self.first_token_s,
            longest_pause_s=self.longest_pause_s,
            mean_gamma=self.drafted / self.rounds if self.rounds else 0.0,
            drafted_ahead=0,
            rtt_ms=None,
            prefill_tokens=self.prefill_tokens,
        )

    def _elapsed(self) -> float:
        return time.perf_counter() - self.start
