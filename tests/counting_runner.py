"""The real target runner, counting the tokens the target runs (prefill reuse is asserted on it)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from drafts.target.activations import NOTHING, ActivationRequest
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree


class CountingRunner(TargetRunner):
    """A :class:`TargetRunner` counting every token passed through the target: ``ran`` in all,
    ``calls`` one entry per forward."""

    ran = 0
    calls: list[int]

    @classmethod
    def of(cls, runner: TargetRunner) -> CountingRunner:
        """The same loaded model, counted (the model is shared, not copied)."""
        counting = cls.__new__(cls)
        counting.__dict__.update(runner.__dict__)
        counting.calls = []
        return counting

    def extend(
        self,
        session: TargetSession,
        tokens: Sequence[int],
        request: ActivationRequest = NOTHING,
        tree: DraftTree | None = None,
        last_only: bool = False,
    ) -> torch.Tensor:
        self.ran += len(tokens)
        self.calls.append(len(tokens))
        return super().extend(session, tokens, request, tree, last_only)
