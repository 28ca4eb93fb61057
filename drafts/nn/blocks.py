"""Transformer building blocks of the draft models, read top to bottom (nanoGPT order).

RMSNorm -> attention (self or cross, grouped-query, RoPE) -> SwiGLU MLP -> decoder block ->
cross-attention block. Attention takes an explicit boolean mask (True = may attend) so the
same code serves training (T-step, staircase and causal masks) and tree drafting.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from drafts.nn.kv_cache import KVCache
from drafts.nn.rope import apply_rope

GQA_IN_SDPA = torch.torch_version.TorchVersion(torch.__version__) >= "2.5"  # scaled_dot_product_attention(enable_gqa)


@dataclass(frozen=True)
class BlockConfig:
    hidden: int  # width of the residual stream
    heads: int  # query heads
    kv_heads: int  # key/value heads (grouped-query attention)
    intermediate: int  # SwiGLU width
    eps: float = 1e-5  # RMSNorm epsilon

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = x.float().pow(2).mean(-1, keepdim=True).add(self.eps).rsqrt()
        return (x.float() * norm).to(x.dtype) * self.weight


class Attention(nn.Module):
    """Grouped-query attention; queries from ``x``, keys/values from ``memory`` (or ``x``)."""

    def __init__(self, cfg: BlockConfig) -> None:
        super().__init__()
        self.cfg = cfg
        hs = cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden, cfg.heads * hs, bias=False)
        self.k_proj = nn.Linear(cfg.hidden, cfg.kv_heads * hs, bias=False)
        self.v_proj = nn.Linear(cfg.hidden, cfg.kv_heads * hs, bias=False)
        self.o_proj = nn.Linear(cfg.heads * hs, cfg.hidden, bias=False)

    def project_kv(
        self, memory: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys (after RoPE) and values of ``memory`` (B, S, C) -> each (B, n_kv, S, hs)."""
        B, S, _ = memory.shape
        k = self.k_proj(memory).view(B, S, self.cfg.kv_heads, -1).transpose(1, 2)  # (B, n_kv, S, hs)
        v = self.v_proj(memory).view(B, S, self.cfg.kv_heads, -1).transpose(1, 2)  # (B, n_kv, S, hs)
        return apply_rope(k, *rope), v

    def attend(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Queries from ``x`` (B, T, C) over keys/values (B, n_kv, S, hs); mask (B or 1, 1, T, S)."""
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.cfg.heads, -1).transpose(1, 2)  # (B, nh, T, hs)
        q = apply_rope(q, *rope)
        groups = self.cfg.heads // self.cfg.kv_heads
        if groups == 1:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, nh, T, hs)
        elif GQA_IN_SDPA:  # each query head reads its group's K/V in place: no copy of the whole cache per step
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # (B, nh, T, hs)
        else:  # torch 2.4: repeat the K/V heads (the same numbers, bit for bit)
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)  # (B, nh, S, hs)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, nh, T, hs)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, cfg: BlockConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden, cfg.intermediate, bias=False)
        self.up_proj = nn.Linear(cfg.hidden, cfg.intermediate, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate, cfg.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.gated(x))

    def gated(self, x: torch.Tensor) -> torch.Tensor:
        """(..., C) -> (..., intermediate): everything before the (linear) down projection."""
        return F.silu(self.gate_proj(x)) * self.up_proj(x)


class DecoderBlock(nn.Module):
    """Pre-norm self-attention + SwiGLU, as a Llama decoder layer."""

    def __init__(self, cfg: BlockConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden, cfg.eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, cfg.eps)
        self.mlp = MLP(cfg)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        mask: torch.Tensor | None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """``x`` (B, T, C); with ``cache`` its keys/values are appended and all are attended."""
        h = self.input_layernorm(x)
        k, v = self.self_attn.project_kv(h, rope)
        if cache is not None:
            k, v = cache.append(k, v)
        x = x + self.self_attn.attend(h, rope, k, v, mask)
        return x + self.mlp(self.post_attention_layernorm(x))

    def forward_mean(
        self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor | None
    ) -> torch.Tensor:
        """``forward(x, rope, mask).mean(dim=1)`` for ``x`` (B, T, C) -> (B, C), with the mean taken
        before the MLP's down projection (linear, so the same function; equal up to float rounding):
        one (B, C) projection instead of T (MoA's LSA: 30 layer tokens per token, ~15 % less work)."""
        h = self.input_layernorm(x)
        k, v = self.self_attn.project_kv(h, rope)
        x = x + self.self_attn.attend(h, rope, k, v, mask)  # (B, T, C)
        gated = self.mlp.gated(self.post_attention_layernorm(x))  # (B, T, I)
        return x.mean(dim=1) + self.mlp.down_proj(gated.mean(dim=1))  # (B, C)


class CrossBlock(nn.Module):
    """Cross-attention from a query stream to a memory stream (MoA's CA layer).

    As in the MoA code, one ``input_layernorm`` normalises both the queries and the memory; the
    residual runs on the query stream, followed by a SwiGLU MLP.
    """

    def __init__(self, cfg: BlockConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden, cfg.eps)
        self.cross_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden, cfg.eps)
        self.mlp = MLP(cfg)

    def memory_kv(
        self, memory: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys/values of memory vectors (B, S, C): computed once per verified token."""
        return self.cross_attn.project_kv(self.input_layernorm(memory), rope)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None,
    ) -> torch.Tensor:
        x = x + self.cross_attn.attend(self.input_layernorm(x), rope, k, v, mask)
        return x + self.mlp(self.post_attention_layernorm(x))
