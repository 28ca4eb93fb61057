"""EAGLE-style feature drafter (Li et al. 2024, EAGLE-1/2): the baseline MoA is measured against.

The input at position i fuses the token embedding with the target feature of position i-1
(``fc``: 2H -> H), one decoder layer predicts the feature of position i, and the frozen LM
head turns it into the next token. Drafting is autoregressive in feature space: beyond the
last verified token the draft feeds its own predicted features back in. Training uses the
target's true features with uniform noise, as EAGLE does (teacher forcing), or, with HASS
context alignment (``moa-train --align-steps N``, :mod:`drafts.eagle.alignment`), also on its own
earlier predictions, as at inference.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from drafts.eagle.alignment import aligned_predictions
from drafts.neural.base import DRAFT_ROPE_THETA, NeuralDraft, TrainBatch
from drafts.neural.target_parts import TargetParts
from drafts.nn.blocks import BlockConfig, DecoderBlock
from drafts.nn.kv_cache import KVCache, scratch_attention_mask, tail_causal_mask
from drafts.nn.rope import rope_tables
from drafts.target.activations import ActivationRequest, Activations

NOISE = 0.2  # EAGLE: features get uniform noise of width 0.2 during training


@dataclass(frozen=True)
class EagleConfig:
    target_layers: int  # which hidden state is the feature: the final one (index L)
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int  # sized so the trainable parameters match MoA's within 10 %

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class EagleDraft(NeuralDraft):
    kind = "eagle"
    aligns_context = True

    def __init__(self, cfg: EagleConfig, parts: TargetParts) -> None:
        super().__init__(parts)
        self.cfg = cfg
        self.needs = ActivationRequest(hidden_layers=(cfg.target_layers,))
        self.fc = nn.Linear(2 * cfg.hidden, cfg.hidden, bias=True)
        self.layer = DecoderBlock(BlockConfig(cfg.hidden, cfg.heads, cfg.kv_heads, cfg.intermediate))
        self._cache = KVCache()
        self._committed = 0
        self._last_feature: torch.Tensor | None = None  # (1, H) target feature of the last committed token
        self._features: list[torch.Tensor] = []  # (n, H) per observe: a cut-back needs the feature before the cut

    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_tables(positions, self.cfg.hidden // self.cfg.heads, DRAFT_ROPE_THETA)

    def _fuse(self, ids: torch.Tensor, prev_features: torch.Tensor) -> torch.Tensor:
        """[embedding of x_i ; feature of i-1] -> (..., H)."""
        return self.fc(torch.cat([self.parts.embed_tokens(ids), prev_features], dim=-1))

    def _noised_parents(self, batch: TrainBatch, generator: torch.Generator | None) -> torch.Tensor:
        """(B, T, H) parent feature of every position: the target's at i-1, noised (0 at i=0)."""
        f = batch.target_hidden  # (B, T, H)
        noise = (torch.rand(f.shape, generator=generator) - 0.5).to(f) * NOISE
        return torch.cat([torch.zeros_like(f[:, :1]), f[:, :-1] + noise[:, :-1]], dim=1)  # (B, T, H)

    def predict(self, batch: TrainBatch, progress: float, generator: torch.Generator | None) -> torch.Tensor:
        B, T = batch.ids.shape
        prev = self._noised_parents(batch, generator)  # (B, T, H)
        rope = self._rope(torch.arange(T, device=prev.device)[None])
        causal = torch.ones(T, T, dtype=torch.bool, device=prev.device).tril()[None, None]
        return self.layer(self._fuse(batch.ids, prev), rope, causal)  # (B, T, H)

    def predict_aligned(
        self, batch: TrainBatch, progress: float, generator: torch.Generator | None, steps: int
    ) -> list[torch.Tensor]:
        """HASS context alignment: ``steps`` (B, T, H) predictions, step j simulating drafting depth j."""
        return aligned_predictions(self, batch.ids, self._noised_parents(batch, generator), steps)

    def reset(self) -> None:
        self._cache.reset()
        self._committed = 0
        self._last_feature = None
        self._features = []

    @torch.inference_mode()
    def observe(self, committed: list[int], start: int, acts: Activations) -> None:
        feats = acts.hidden[self.cfg.target_layers]  # (n, H) true target features
        n, device = len(committed), feats.device
        last = self._last_feature if self._last_feature is not None else feats.new_zeros(1, feats.shape[1])
        prev = torch.cat([last, feats[:-1]], dim=0)  # (n, H)
        x = self._fuse(torch.tensor(committed, device=device), prev)[None]  # (1, n, H)
        rope = self._rope(torch.arange(start, start + n, device=device)[None])
        self.layer(x, rope, tail_causal_mask(n, self._committed, device), cache=self._cache)
        self._committed = self._cache.length
        self._last_feature = feats[-1:]
        self._features.append(feats)

    def initial_state(self) -> Any:
        return self._last_feature

    @torch.inference_mode()
    def step(
        self, tokens: torch.Tensor, positions: torch.Tensor, scratch_mask: torch.Tensor | None, state: Any
    ) -> tuple[torch.Tensor, Any]:
        x = self._fuse(tokens, state)[None]  # (1, n, H)
        mask = scratch_attention_mask(self._committed, scratch_mask)
        out = self.layer(x, self._rope(positions[None]), mask, cache=self._cache)[0]  # (n, H)
        return self.parts.logits(out), out

    def end_round(self) -> None:
        self._cache.truncate(self._committed)

    def truncate(self, length: int) -> None:
        if length == 0:
            self.reset()
            return
        self._committed = min(self._committed, length)
        self.end_round()
        kept = torch.cat(self._features)[: self._committed]  # (length, H)
        self._features, self._last_feature = [kept], kept[-1:]

    def config_dict(self) -> dict[str, Any]:
        return self.cfg.to_dict()
