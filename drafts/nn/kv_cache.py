"""A small growable key/value cache for one attention layer of a draft model."""

from __future__ import annotations

import torch


class KVCache:
    """Keys and values (B, n_kv, T, hs) with their positions; grows by concatenation."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add (B, n_kv, t, hs) keys/values; returns the whole cache."""
        if self.keys is None or self.values is None:
            self.keys, self.values = k, v
        else:
            self.keys = torch.cat([self.keys, k], dim=2)
            self.values = torch.cat([self.values, v], dim=2)
        return self.keys, self.values

    def truncate(self, length: int) -> None:
        if self.keys is not None and self.values is not None and self.keys.shape[2] > length:
            self.keys = self.keys[:, :, :length]
            self.values = self.values[:, :, :length]

    def reset(self) -> None:
        self.keys = self.values = None


def tail_causal_mask(new: int, past: int, device: torch.device) -> torch.Tensor | None:
    """(1, 1, new, past + new) bool: new tokens see every past token and the new ones causally.

    None when ``new`` is 1 (one query sees everything; SDPA needs no mask).
    """
    if new == 1:
        return None
    i = torch.arange(new, device=device)
    mask = torch.ones(new, past + new, dtype=torch.bool, device=device)
    mask[:, past:] = i[None, :] <= i[:, None]
    return mask[None, None]


def scratch_attention_mask(past: int, scratch_mask: torch.Tensor | None) -> torch.Tensor | None:
    """(1, 1, n, past + S) mask for tree drafting: all ``past`` committed tokens plus the scratch
    tokens ``scratch_mask`` (n, S) allows; None (all visible) for a chain."""
    if scratch_mask is None:
        return None
    n = scratch_mask.shape[0]
    committed = torch.ones(n, past, dtype=torch.bool, device=scratch_mask.device)
    return torch.cat([committed, scratch_mask], dim=1)[None, None]
