"""A finished generation and its statistics, built from the round events of a run."""

from __future__ import annotations

from dataclasses import dataclass, field

from drafts.decoding.events import RoundEvent
from drafts.decoding.stopping import StopReason


@dataclass
class Generation:
    prompt_len: int
    tokens: list[int] = field(default_factory=list)
    rounds: list[RoundEvent] = field(default_factory=list)  # the prefill's round first
    stop: StopReason | None = None
    wall_s: float = 0.0

    def add(self, event: RoundEvent) -> None:
        self.rounds.append(event)
        self.tokens.extend(event.output)

    @property
    def target_forwards(self) -> int:
        """Target passes, the prefill included."""
        return len(self.rounds)

    @property
    def draft_rounds(self) -> list[RoundEvent]:
        """Rounds after the prefill."""
        return self.rounds[1:]
