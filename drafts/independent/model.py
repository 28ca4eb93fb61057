"""The independent draft: a small language model on the target's frozen embeddings and LM head
that sees no target activations (the classic draft model of Leviathan et al. 2023)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from drafts.neural.base import DRAFT_ROPE_THETA, NeuralDraft, TrainBatch
from drafts.neural.target_parts import TargetParts
from drafts.nn.blocks import BlockConfig, DecoderBlock, RMSNorm
from drafts.nn.kv_cache import KVCache, scratch_attention_mask, tail_causal_mask
from drafts.nn.rope import rope_tables
from drafts.target.activations import NOTHING, Activations


@dataclass(frozen=True)
class IndependentConfig:
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    layers: int = 2

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class IndependentDraft(NeuralDraft):
    kind = "independent"

    def __init__(self, cfg: IndependentConfig, parts: TargetParts) -> None:
        super().__init__(parts)
        self.cfg = cfg
        self.needs = NOTHING
        block = BlockConfig(cfg.hidden, cfg.heads, cfg.kv_heads, cfg.intermediate)
        self.blocks = nn.ModuleList(DecoderBlock(block) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.hidden, block.eps)
        self._caches = [KVCache() for _ in range(cfg.layers)]
        self._committed = 0

    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_tables(positions, self.cfg.hidden // self.cfg.heads, DRAFT_ROPE_THETA)

    def _run(self, x: torch.Tensor, rope: Any, mask: torch.Tensor | None, cached: bool) -> torch.Tensor:
        for block, cache in zip(self.blocks, self._caches, strict=True):
            x = block(x, rope, mask, cache=cache if cached else None)
        return self.norm(x)

    def predict(self, batch: TrainBatch, progress: float, generator: torch.Generator | None) -> torch.Tensor:
        T = batch.ids.shape[1]
        rope = self._rope(torch.arange(T, device=batch.ids.device)[None])
        causal = torch.ones(T, T, dtype=torch.bool, device=batch.ids.device).tril()[None, None]
        return self._run(self.parts.embed_tokens(batch.ids), rope, causal, cached=False)

    def reset(self) -> None:
        for cache in self._caches:
            cache.reset()
        self._committed = 0

    @torch.inference_mode()
    def observe(self, committed: list[int], start: int, acts: Activations) -> None:
        n, device = len(committed), self.parts.head_weight.device
        rope = self._rope(torch.arange(start, start + n, device=device)[None])
        x = self.parts.embed_tokens(torch.tensor([committed], device=device))
        self._run(x, rope, tail_causal_mask(n, self._committed, device), cached=True)
        self._committed = self._caches[0].length

    @torch.inference_mode()
    def step(
        self, tokens: torch.Tensor, positions: torch.Tensor, scratch_mask: torch.Tensor | None, state: Any
    ) -> tuple[torch.Tensor, Any]:
        mask = scratch_attention_mask(self._committed, scratch_mask)
        out = self._run(self.parts.embed_tokens(tokens[None]), self._rope(positions[None]), mask, cached=True)
        return self.parts.logits(out[0]), None

    def end_round(self) -> None:
        for cache in self._caches:
            cache.truncate(self._committed)

    def truncate(self, length: int) -> None:
        self._committed = min(self._committed, length)
        self.end_round()

    def config_dict(self) -> dict[str, Any]:
        return self.cfg.to_dict()
