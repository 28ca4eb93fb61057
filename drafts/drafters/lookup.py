"""Prompt lookup decoding: the training-free baseline (Saxena 2023; transformers, llama.cpp).

The last n tokens of the context are searched for earlier in the context (prompt and output);
the tokens that followed the most recent earlier match are proposed as a chain. Tries n from
``max_ngram`` down to ``min_ngram``. Proposals are deterministic (q = δ).
"""

from __future__ import annotations

import torch

from drafts.drafters.base import DraftShape
from drafts.sampling import SamplingConfig
from drafts.target.activations import NOTHING, Activations
from drafts.tree import DraftTree


class PromptLookupDrafter:
    name = "lookup"
    needs = NOTHING

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1) -> None:
        self.max_ngram, self.min_ngram = max_ngram, min_ngram

    def begin(self, prompt: list[int]) -> None:
        pass

    def observe(self, committed: list[int], acts: Activations, next_token: int) -> None:
        pass

    def propose(
        self, context: list[int], shape: DraftShape, cfg: SamplingConfig, generator: torch.Generator | None
    ) -> DraftTree:
        return DraftTree.chain(self.lookup(context, shape.gamma))

    def lookup(self, context: list[int], gamma: int) -> list[int]:
        """The ``gamma`` tokens after the latest earlier occurrence of the context's last n-gram."""
        if gamma == 0:
            return []
        seq = torch.tensor(context)
        for n in range(min(self.max_ngram, len(context) - 1), self.min_ngram - 1, -1):
            windows = seq[:-1].unfold(0, n, 1)  # (len - n, n): every n-gram that has a successor
            hits = (windows == seq[-n:]).all(dim=1).nonzero().flatten()
            if hits.numel():
                start = int(hits[-1]) + n
                return context[start : start + gamma]
        return []
