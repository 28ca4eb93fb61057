"""Mixture of Attentions draft (Zimmer, Gritta, Lampouras, Bou Ammar, Wang; ICLR 2025).

Per verified token the target's keys/values of *all* L layers go through Layer Self-Attention
(attention across the layers, layer index as position, bidirectional), a mean over layers and a
linear map ``Ekv2E`` to the draft width: one memory vector per verified token, computed once.
Drafted tokens run Self-Attention over the frozen target embeddings (own KV cache), then
Cross-Attention from that stream to the memory (only target state up to the last verified
token exists), then the frozen target LM head (Target Layer Inference N = 0: the output is a
prediction of the target's final hidden state).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from drafts.moa.config import MoAConfig
from drafts.moa.masks import (
    cross_attention_mask,
    sample_periods,
    self_attention_mask,
    staircase_probability,
    verification_starts,
)
from drafts.neural.base import DRAFT_ROPE_THETA, NeuralDraft, TrainBatch
from drafts.neural.target_parts import TargetParts
from drafts.nn.blocks import BlockConfig, CrossBlock, DecoderBlock
from drafts.nn.kv_cache import KVCache, scratch_attention_mask, tail_causal_mask
from drafts.nn.rope import rope_tables
from drafts.target.activations import ActivationRequest, Activations


class MoADraft(NeuralDraft):
    kind = "moa"

    def __init__(self, cfg: MoAConfig, parts: TargetParts) -> None:
        super().__init__(parts)
        self.cfg = cfg
        self.needs = ActivationRequest(all_layer_kv=True)
        lsa = BlockConfig(cfg.kv_width, cfg.lsa_heads, cfg.lsa_kv_heads, cfg.lsa_intermediate)
        tok = BlockConfig(cfg.hidden, cfg.heads, cfg.kv_heads, cfg.intermediate)
        self.layer_self_attention = DecoderBlock(lsa)
        self.Ekv2E = nn.Linear(cfg.kv_width, cfg.hidden, bias=True)
        self.self_attention = DecoderBlock(tok)
        self.cross_attention = CrossBlock(tok)
        self._sa_cache = KVCache()  # SA keys/values: committed tokens, then this round's scratch
        self._memory = KVCache()  # CA keys/values of the compressed target state (committed only)
        self._committed = 0

    # -- shared pieces ---------------------------------------------------------------------
    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_tables(positions, self.cfg.hidden // self.cfg.heads, DRAFT_ROPE_THETA)

    def compress(self, kv: torch.Tensor) -> torch.Tensor:
        """Layer Self-Attention + mean + Ekv2E: (B, T, L, W) target keys/values -> (B, T, H)."""
        B, T, L, W = kv.shape
        x = kv.reshape(B * T, L, W)  # each token a batch element, the layers its sequence
        layers = torch.arange(L, device=kv.device)[None]  # (1, L): layer index as position
        rope = rope_tables(layers, W // self.cfg.lsa_heads, DRAFT_ROPE_THETA)
        x = self.layer_self_attention(x, rope, mask=None)  # (B*T, L, W), bidirectional
        return self.Ekv2E(x.mean(dim=1)).view(B, T, -1)  # (B, T, H)

    # -- training ------------------------------------------------------------------------
    def predict(self, batch: TrainBatch, progress: float, generator: torch.Generator | None) -> torch.Tensor:
        assert batch.target_kv is not None, "MoA trains on the target's all-layer keys/values"
        B, T = batch.ids.shape
        starts = verification_starts(batch.loss_mask, sample_periods(B, generator))  # (B, T)
        p_stair = staircase_probability(progress) if self.cfg.staircase else 0.0
        stair = torch.rand(B, generator=generator) < p_stair  # (B,)
        rope = self._rope(torch.arange(T, device=batch.ids.device)[None])
        e = self.parts.embed_tokens(batch.ids)  # (B, T, H)
        s = self.self_attention(e, rope, self_attention_mask(starts, stair.to(e.device)))  # (B, T, H)
        k, v = self.cross_attention.memory_kv(self.compress(batch.target_kv), rope)  # (B, n_kv, T, hs)
        return self.cross_attention(s, rope, k, v, cross_attention_mask(starts))  # (B, T, H)

    # -- inference -----------------------------------------------------------------------
    def reset(self) -> None:
        self._sa_cache.reset()
        self._memory.reset()
        self._committed = 0

    def memory_of(self, acts: Activations) -> torch.Tensor:
        """(n, H) memory vectors: compressed here from the all-layer KV, or already by a verifier."""
        if acts.memory is not None:
            return acts.memory
        assert acts.kv is not None, "MoA needs the target's all-layer keys/values or their memory vectors"
        return self.compress(acts.kv[None])[0]

    @torch.inference_mode()
    def observe(self, committed: list[int], start: int, acts: Activations) -> None:
        n = len(committed)
        device = self.parts.head_weight.device
        rope = self._rope(torch.arange(start, start + n, device=device)[None])
        e = self.parts.embed_tokens(torch.tensor([committed], device=device))  # (1, n, H)
        self.self_attention(e, rope, tail_causal_mask(n, self._committed, device), cache=self._sa_cache)
        memory = self.memory_of(acts).to(e.dtype)[None]  # (1, n, H): once per verified token
        self._memory.append(*self.cross_attention.memory_kv(memory, rope))
        self._committed = self._sa_cache.length

    @torch.inference_mode()
    def step(
        self, tokens: torch.Tensor, positions: torch.Tensor, scratch_mask: torch.Tensor | None, state: Any
    ) -> tuple[torch.Tensor, Any]:
        rope = self._rope(positions[None])
        e = self.parts.embed_tokens(tokens[None])  # (1, n, H)
        mask = scratch_attention_mask(self._committed, scratch_mask)
        s = self.self_attention(e, rope, mask, cache=self._sa_cache)  # (1, n, H)
        k, v = self._memory.keys, self._memory.values
        assert k is not None and v is not None, "observe() the prompt before drafting"
        out = self.cross_attention(s, rope, k, v, mask=None)  # every committed state is visible
        return self.parts.logits(out[0]), None

    def end_round(self) -> None:
        self._sa_cache.truncate(self._committed)

    def config_dict(self) -> dict[str, Any]:
        return self.cfg.to_dict()
