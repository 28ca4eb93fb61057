"""A small growable key/value cache for one attention layer of a draft model."""

from __future__ import annotations

import torch


class KVCache:
    """Keys and values (B, n_kv, T, hs) of the tokens seen so far; grows in place.

    The buffers keep spare room, so an append copies only the new tokens (concatenating copied
    the whole cache on every draft step); ``keys``/``values`` are prefix views of them, the same
    numbers a concatenation gives. A truncated prefix is overwritten by the next append, so a
    view taken before ``truncate`` must not be read after the next ``append``.
    """

    def __init__(self) -> None:
        self._k: torch.Tensor | None = None  # (B, n_kv, capacity, hs)
        self._v: torch.Tensor | None = None
        self.length = 0

    @property
    def keys(self) -> torch.Tensor | None:
        return None if self._k is None else self._k[:, :, : self.length]

    @property
    def values(self) -> torch.Tensor | None:
        return None if self._v is None else self._v[:, :, : self.length]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add (B, n_kv, t, hs) keys/values; returns the whole cache."""
        end = self.length + k.shape[2]
        if self._k is None or self._v is None or self._k.shape[2] < end or not _writable(self._k):
            self._k, self._v = _grown(self._k, k, self.length, end), _grown(self._v, v, self.length, end)
        self._k[:, :, self.length : end] = k
        self._v[:, :, self.length : end] = v
        self.length = end
        return self._k[:, :, :end], self._v[:, :, :end]

    def truncate(self, length: int) -> None:
        self.length = min(self.length, length)

    def reset(self) -> None:
        self._k = self._v = None
        self.length = 0


SPARE = 64  # positions of room added beyond what an append needs (at least; half the size once it is larger)


def _grown(buffer: torch.Tensor | None, like: torch.Tensor, length: int, needed: int) -> torch.Tensor:
    """A (B, n_kv, capacity >= needed, hs) buffer shaped after ``like`` holding ``buffer``'s first ``length``."""
    B, n_kv, _, hs = like.shape
    grown = like.new_empty(B, n_kv, needed + max(SPARE, needed // 2), hs)
    if buffer is not None and length:
        grown[:, :, :length] = buffer[:, :, :length]
    return grown


def _writable(buffer: torch.Tensor) -> bool:
    """An inference-mode buffer cannot be written outside inference mode (a cache used both ways)."""
    return not buffer.is_inference() or torch.is_inference_mode_enabled()


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
