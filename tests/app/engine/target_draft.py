"""A perfect draft for tests: the target model itself behind the NeuralDraft interface.

At T = 0 it drafts exactly the target's greedy tokens, so every chain is accepted whole: the
engine's draft-ahead path (keep the tokens drafted while a verification was in flight) and the
repair of offline tokens that all survive are exercised deterministically.
"""

from __future__ import annotations

from typing import Any

import torch

from drafts.neural.base import NeuralDraft
from drafts.neural.target_parts import TargetParts
from drafts.target.activations import NOTHING, Activations
from drafts.target.runner import TargetRunner


class TargetAsDraft(NeuralDraft):
    kind = "target"

    def __init__(self, runner: TargetRunner) -> None:
        super().__init__(TargetParts.from_model(runner.model))
        self.runner = runner
        self.needs = NOTHING
        self._session = runner.new_session()
        self._committed = 0

    def reset(self) -> None:
        self._session = self.runner.new_session()
        self._committed = 0

    def observe(self, committed: list[int], start: int, acts: Activations) -> None:
        self.end_round()
        self.runner.extend(self._session, committed)
        self.runner.commit(self._session)
        self._committed = self._session.length

    def step(
        self, tokens: torch.Tensor, positions: torch.Tensor, scratch_mask: torch.Tensor | None, state: Any
    ) -> tuple[torch.Tensor, Any]:
        assert scratch_mask is None, "chains only"
        logits = self.runner.extend(self._session, tokens.tolist())  # (n, V)
        self.runner.commit(self._session)  # scratch: end_round drops it
        return logits, None

    def end_round(self) -> None:
        self._session.truncate(self._committed)

    def truncate(self, length: int) -> None:
        self._committed = min(self._committed, length)
        self.end_round()

    def config_dict(self) -> dict[str, Any]:
        return {}
