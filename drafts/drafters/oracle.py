"""The oracle drafter: replays the target's own greedy continuation (bench only).

At temperature 0 every proposal is accepted, so the loop runs at its ideal; comparing with
the ideal speedup measures the loop's overhead.
"""

from __future__ import annotations

import torch

from drafts.drafters.base import DraftShape
from drafts.sampling import SamplingConfig
from drafts.target.activations import NOTHING, Activations
from drafts.tree import DraftTree


class OracleDrafter:
    name = "oracle"
    needs = NOTHING

    def __init__(self, reference: list[int]) -> None:
        self.reference = reference  # the target's greedy continuation of the prompt
        self.prompt_len = 0

    def begin(self, prompt: list[int]) -> None:
        self.prompt_len = len(prompt)

    def observe(self, committed: list[int], acts: Activations, next_token: int) -> None:
        pass

    def propose(
        self, context: list[int], shape: DraftShape, cfg: SamplingConfig, generator: torch.Generator | None
    ) -> DraftTree:
        done = len(context) - self.prompt_len  # the root is reference[done - 1]
        return DraftTree.chain(self.reference[done : done + shape.gamma])
