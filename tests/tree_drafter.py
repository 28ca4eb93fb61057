"""A test drafter that proposes a top-2 tree from the target's own logits.

It reads the target model directly (full forwards, no cache), so at temperature 0 the target's
argmax is always among its candidates. The root's children are ordered worst first, so the
accepted path skips a sibling and the runner must compact a non-contiguous selection of the
cache.
"""

from __future__ import annotations

import torch

from drafts.drafters.base import DraftShape
from drafts.sampling import SamplingConfig
from drafts.target.activations import NOTHING, Activations
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree


class TargetTop2TreeDrafter:
    """Depth-2 tree: the target's top-2 after the root, then the top-2 after each of those."""

    name = "target-top2-tree"
    needs = NOTHING

    def __init__(self, runner: TargetRunner) -> None:
        self.runner = runner

    def begin(self, prompt: list[int]) -> None:
        pass

    def observe(self, committed: list[int], acts: Activations, next_token: int) -> None:
        pass

    def propose(
        self, context: list[int], shape: DraftShape, cfg: SamplingConfig, generator: torch.Generator | None
    ) -> DraftTree:
        best, second = self._top2(context)
        tokens = [second, best, *self._top2(context + [second]), *self._top2(context + [best])]
        return DraftTree(tuple(tokens), (0, 0, 1, 1, 2, 2))

    @torch.inference_mode()
    def _top2(self, context: list[int]) -> list[int]:
        ids = torch.tensor([context], device=self.runner.device)  # (1, T)
        logits = self.runner.model(input_ids=ids).logits[0, -1]  # (V,)
        return torch.topk(logits, 2).indices.tolist()
