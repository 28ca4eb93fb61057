"""Rotary position embeddings (Su et al. 2021), as Llama applies them (rotate_half layout)."""

from __future__ import annotations

from functools import lru_cache

import torch


def rope_tables(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin for ``positions`` (...,) -> each (..., head_dim)."""
    angles = positions.float()[..., None] * inverse_frequencies(head_dim, theta, positions.device)  # (..., hd / 2)
    angles = torch.cat([angles, angles], dim=-1)  # (..., head_dim)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` (B, nh, T, hs) by the tables (B or 1, T, hs)."""
    cos, sin = cos[:, None].to(x.dtype), sin[:, None].to(x.dtype)  # (B, 1, T, hs)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


@lru_cache(maxsize=16)
def inverse_frequencies(head_dim: int, theta: float, device: torch.device) -> torch.Tensor:
    """(head_dim / 2,) theta^(-2i/d), computed once per (head_dim, theta, device): a draft step needs it
    for every layer's tables. A normal tensor even when first asked for in inference mode."""
    with torch.inference_mode(False):
        return 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
