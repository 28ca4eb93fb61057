"""Mixture of Attentions draft (Zimmer, Gritta, Lampouras, Bou Ammar, Wang; ICLR 2025).

Per verified token the target's keys/values of *all* L layers go through Layer Self-Attention
(attention across the layers, layer index as position, bidirectional), a mean over layers and a
linear map ``Ekv2E`` to the draft width: one memory vector per verified token, computed once.
Drafted tokens run Self-Attention over the frozen target embeddings (own KV cache), then
Cross-Attention from that stream to the memory (only target state up to the last verified
token exists), then the frozen target LM head.

Target Layer Inference (TLI, §(e)): with N = 0 the Cross-Attention output is a prediction of the
target's final hidden state. With N > 0 it predicts ``hidden_states[L - N]``, the input of the
target's last N decoder layers, which run frozen (:mod:`drafts.moa.tail`), then the target's
final norm and LM head.

Design decision (the paper leaves it open; its released code runs the reused layers over the
drafted positions only): the reused layers attend to the target's *own* cached keys/values of
those layers at every verified position (they arrive with the all-layer K/V LSA reads anyway),
plus the draft's own keys/values at this round's drafted positions under the chain/tree
scratch mask. Training reproduces this exactly in one pass: query ``i`` sees the true K/V at
``j <= start[i]`` and K/V of the draft's predicted layer inputs at ``start[i] < j <= i``.
A verifier that sends compressed memory vectors instead of raw K/V cannot serve N > 0.

Ablation options (issue 12, "why MoA does not beat EAGLE"), both off by default: ``lsa_layers``
lets LSA read only some of the target's layers (evenly spaced, the last included);
``final_hidden`` adds the target's final hidden state of each verified token (EAGLE's whole
input, which the all-layer K/V never contain: they are the layers' *inputs*) to its memory
vector through a linear map started at zero, so a draft extended from one without it starts
out computing the same function.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from drafts.errors import ConfigError
from drafts.moa.config import MoAConfig
from drafts.moa.masks import (
    cross_attention_mask,
    sample_periods,
    self_attention_mask,
    staircase_probability,
    verification_starts,
)
from drafts.moa.tail import TargetTail
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
        final = (cfg.target_layers,) if cfg.final_hidden else ()
        self.needs = ActivationRequest(hidden_layers=final, all_layer_kv=True)
        lsa = BlockConfig(cfg.kv_width, cfg.lsa_heads, cfg.lsa_kv_heads, cfg.lsa_intermediate)
        tok = BlockConfig(cfg.hidden, cfg.heads, cfg.kv_heads, cfg.intermediate)
        self.layer_self_attention = DecoderBlock(lsa)
        self.Ekv2E = nn.Linear(cfg.kv_width, cfg.hidden, bias=True)
        self.final_proj = nn.Linear(cfg.hidden, cfg.hidden, bias=False) if cfg.final_hidden else None
        if self.final_proj is not None:
            nn.init.zeros_(self.final_proj.weight)  # no contribution until trained
        self._lsa_layers = list(cfg.lsa_layer_indices()) if cfg.lsa_layers else None
        self.self_attention = DecoderBlock(tok)
        self.cross_attention = CrossBlock(tok)
        self._sa_cache = KVCache()  # SA keys/values: committed tokens, then this round's scratch
        self._memory = KVCache()  # CA keys/values of the compressed target state (committed only)
        self._committed = 0
        self.tail = _tail_of(parts, cfg.tli_layers) if cfg.tli_layers else None  # not a submodule: never saved
        if cfg.tli_layers:
            self.tail_input_layer = cfg.target_layers - cfg.tli_layers
        self._tail_caches = [KVCache() for _ in range(cfg.tli_layers)]  # per tail layer: committed, scratch
        self._tail_key_pos = torch.zeros(0, dtype=torch.long)  # (S,) positions of those keys

    # -- shared pieces ---------------------------------------------------------------------
    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return rope_tables(positions, self.cfg.hidden // self.cfg.heads, DRAFT_ROPE_THETA)

    def memory_compressible(self) -> bool:
        """Not with Target Layer Inference (N > 0): its reused target layers attend to the target's
        own keys/values of those layers, so such a draft asks for the raw all-layer KV. Not with
        ``final_hidden`` either: the verifier compresses the K/V alone."""
        return super().memory_compressible() and self.cfg.tli_layers == 0 and not self.cfg.final_hidden

    def compress(self, kv: torch.Tensor) -> torch.Tensor:
        """Layer Self-Attention + mean + Ekv2E: (B, T, L, W) target keys/values -> (B, T, H)."""
        if self._lsa_layers is not None:
            kv = kv[:, :, self._lsa_layers]  # (B, T, n, W): the chosen layers only
        B, T, L, W = kv.shape
        x = kv.reshape(B * T, L, W)  # each token a batch element, the layers its sequence
        layers = torch.arange(L, device=kv.device)[None]  # (1, L): layer index as position
        rope = rope_tables(layers, W // self.cfg.lsa_heads, DRAFT_ROPE_THETA)
        x = self.layer_self_attention.forward_mean(x, rope, mask=None)  # (B*T, W): bidirectional, mean over L
        return self.Ekv2E(x).view(B, T, -1)  # (B, T, H)

    def _with_final(self, memory: torch.Tensor, final: torch.Tensor | None) -> torch.Tensor:
        """``memory`` (B, T, H) plus the projected final hidden state (B, T, H) when configured."""
        if self.final_proj is None:
            return memory
        assert final is not None, "this MoA draft reads the target's final hidden state (final_hidden)"
        return memory + self.final_proj(final.to(memory.dtype))

    # -- training ------------------------------------------------------------------------
    def predict(self, batch: TrainBatch, progress: float, generator: torch.Generator | None) -> torch.Tensor:
        return self.predict_features(batch, progress, generator)[0]

    def predict_features(
        self, batch: TrainBatch, progress: float, generator: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(B, T, H) final hidden prediction, and with TLI the (B, T, H) predicted tail input."""
        assert batch.target_kv is not None, "MoA trains on the target's all-layer keys/values"
        B, T = batch.ids.shape
        periods = sample_periods(B, generator, (self.cfg.period_min, self.cfg.period_max))  # (B,)
        starts = verification_starts(batch.loss_mask, periods, self.cfg.depth0)  # (B, T)
        p_stair = staircase_probability(progress) if self.cfg.staircase else 0.0
        stair = torch.rand(B, generator=generator) < p_stair  # (B,)
        rope = self._rope(torch.arange(T, device=batch.ids.device)[None])
        e = self.parts.embed_tokens(batch.ids)  # (B, T, H)
        s = self.self_attention(e, rope, self_attention_mask(starts, stair.to(e.device)))  # (B, T, H)
        memory = self._with_final(self.compress(batch.target_kv), batch.target_hidden)  # (B, T, H)
        k, v = self.cross_attention.memory_kv(memory, rope)  # (B, n_kv, T, hs)
        out = self.cross_attention(s, rope, k, v, cross_attention_mask(starts))  # (B, T, H)
        if self.tail is None:
            return out, None
        return self.tail.parallel(out, batch.target_kv, starts).to(out.dtype), out

    # -- inference -----------------------------------------------------------------------
    def reset(self) -> None:
        self._sa_cache.reset()
        self._memory.reset()
        for cache in self._tail_caches:
            cache.reset()
        self._tail_key_pos = self._tail_key_pos[:0]
        self._committed = 0

    def memory_of(self, acts: Activations) -> torch.Tensor:
        """(n, H) memory vectors: compressed here from the all-layer KV, or already by a verifier."""
        if acts.memory is not None:
            return acts.memory
        assert acts.kv is not None, "MoA needs the target's all-layer keys/values or their memory vectors"
        final = acts.hidden.get(self.cfg.target_layers) if self.final_proj is not None else None
        return self._with_final(self.compress(acts.kv[None]), None if final is None else final[None])[0]

    @torch.inference_mode()
    def observe(self, committed: list[int], start: int, acts: Activations) -> None:
        n = len(committed)
        device = self.parts.head_weight.device
        rope = self._rope(torch.arange(start, start + n, device=device)[None])
        e = self.parts.embed_tokens(torch.tensor([committed], device=device))  # (1, n, H)
        self.self_attention(e, rope, tail_causal_mask(n, self._committed, device), cache=self._sa_cache)
        memory = self.memory_of(acts).to(e.dtype)[None]  # (1, n, H): once per verified token
        self._memory.append(*self.cross_attention.memory_kv(memory, rope))
        if self.tail is not None:
            self._observe_tail(acts, start, n)
        self._committed = self._sa_cache.length

    def _observe_tail(self, acts: Activations, start: int, n: int) -> None:
        """Cache the target's own keys/values of the tail layers for the committed tokens."""
        assert self.tail is not None
        if acts.kv is None:
            raise ConfigError(
                f"this MoA draft reuses the target's last {self.cfg.tli_layers} layers (TLI) and needs their raw "
                "keys/values, but only memory vectors arrived (client-server drafting); use a --tli 0 draft there"
            )
        for cache, (k, v) in zip(self._tail_caches, self.tail.true_kv(acts.kv[None]), strict=True):
            cache.append(k, v)  # (1, n_kv, n, hd) each
        positions = torch.arange(start, start + n, device=acts.kv.device)
        self._tail_key_pos = torch.cat([self._tail_key_pos.to(positions.device), positions])

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
        if self.tail is not None:
            self._tail_key_pos = torch.cat([self._tail_key_pos.to(positions.device), positions])
            out = self.tail.incremental(out, positions, mask, self._tail_key_pos, self._tail_caches)
        return self.parts.logits(out[0]), None

    def end_round(self) -> None:
        self._sa_cache.truncate(self._committed)
        for cache in self._tail_caches:
            cache.truncate(self._committed)
        self._tail_key_pos = self._tail_key_pos[: self._committed]

    def truncate(self, length: int) -> None:
        if length == 0:
            self.reset()
            return
        self._committed = min(self._committed, length)
        self.end_round()  # every per-token cache back to ``length`` (scratch included)
        self._memory.truncate(self._committed)

    def config_dict(self) -> dict[str, Any]:
        return self.cfg.to_dict()


def _tail_of(parts: TargetParts, n: int) -> TargetTail:
    """The target's last ``n`` layers (references to its frozen modules, rebuilt at every load)."""
    if parts.source is None:
        raise ConfigError(
            f"a MoA draft with --tli {n} reuses the target's last layers; build it from "
            "TargetParts.from_model(target) (these parts carry no target model)"
        )
    return TargetTail(parts.source, n)
