"""A trained draft (MoA, EAGLE, independent) behind the :class:`~drafts.drafters.base.Drafter`
interface: chains (greedy, or sampled with their proposal q at T > 0) and EAGLE-2 trees."""

from __future__ import annotations

import torch

from drafts.drafters.base import DraftShape
from drafts.neural.base import NeuralDraft
from drafts.neural.tree_search import dynamic_tree
from drafts.sampling import SamplingConfig, logits_to_probs, sample
from drafts.target.activations import Activations
from drafts.tree import DraftTree


class NeuralDrafter:
    def __init__(self, model: NeuralDraft, name: str | None = None) -> None:
        self.model = model.eval()
        self.name = name or model.kind
        self.needs = model.needs
        self._length = 0  # committed tokens the draft has observed

    def begin(self, prompt: list[int]) -> None:
        self.model.reset()
        self._length = 0

    def observe(self, committed: list[int], acts: Activations, next_token: int) -> None:
        self.model.observe(committed, self._length, acts)
        self._length += len(committed)

    def truncate(self, length: int) -> None:
        """Keep the first ``length`` observed tokens (a conversation's common prefix with its last turn)."""
        if not 0 <= length <= self._length:
            raise ValueError(f"cannot cut the draft back to {length} tokens: it has observed {self._length}")
        self.model.truncate(length)
        self._length = length

    @torch.inference_mode()
    def propose(
        self, context: list[int], shape: DraftShape, cfg: SamplingConfig, generator: torch.Generator | None
    ) -> DraftTree:
        position = len(context) - 1  # the root's position
        try:
            if shape.is_tree:
                return dynamic_tree(self.model, context[-1], position, shape)
            return self._chain(context[-1], position, shape, cfg, generator)
        finally:
            self.model.end_round()

    def _chain(
        self, root: int, position: int, shape: DraftShape, cfg: SamplingConfig, generator: torch.Generator | None
    ) -> DraftTree:
        """Up to ``shape.gamma`` tokens; with ``min_confidence``, stop where the draft's top probability
        falls below it (EAGLE-2: the draft's confidence predicts acceptance)."""
        device = self.model.parts.head_weight.device
        parts, state, token = self.model.parts, self.model.initial_state(), root
        tokens: list[int] = []
        proposals: list[torch.Tensor] = []
        for depth in range(shape.gamma):
            pos = torch.tensor([position + depth], device=device)
            logits, state = self.model.step(torch.tensor([token], device=device), pos, None, state)
            if shape.min_confidence and not shape.keeps(float(torch.softmax(logits[0].float(), -1).max())):
                break  # decided before sampling, so a kept token is still drawn from q: lossless at T > 0
            if cfg.greedy:
                draft_id = int(logits[0].argmax())
            else:
                q = logits_to_probs(logits[0], cfg)  # (Dv,) the same transform as the target's
                draft_id = int(sample(q, generator))
                proposals.append(parts.to_full_vocab(q))
            token = int(parts.d2t[draft_id])
            tokens.append(token)
        q_full = torch.stack(proposals) if proposals else None  # (n, V)
        return DraftTree.chain(tokens, q_full)
