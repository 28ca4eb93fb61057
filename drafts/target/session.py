"""Per-conversation target state: the KV cache and what in it is committed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache

from drafts.target.growing_cache import GrowingCache


@dataclass
class TargetSession:
    """One conversation's target KV cache.

    ``length`` tokens are committed (their keys/values are final). After ``extend`` the cache
    holds ``pending`` more positions (a chain or tree under verification) until ``commit``
    keeps the accepted ones and drops the rest.
    """

    cache: DynamicCache = field(default_factory=GrowingCache)  # full-length layers, no trimming; appends in place
    length: int = 0
    pending: int = 0
    pending_hidden: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> (pending, H)

    def keep_pending(self, keep: list[int]) -> None:
        """Keep only pending positions ``keep`` (ascending), in that order, in every layer."""
        start = self.length
        if keep == list(range(len(keep))):
            self._crop_to(start + len(keep))
        else:
            self._compact_tail(start, keep)
        self.length = start + len(keep)
        self.pending = 0

    def truncate(self, length: int) -> None:
        """Forget every token from ``length`` on (committed or pending)."""
        if length > self.length:
            raise ValueError(f"cannot truncate to {length}: only {self.length} tokens are committed")
        self._crop_to(length)
        self.length, self.pending = length, 0
        self.pending_hidden = {}

    def tail_kv(self, count: int) -> torch.Tensor:
        """Keys and values of the last ``count`` committed tokens: (count, L, 2 * n_kv * hd)."""
        return self.kv_rows(self.length - count, count)

    def kv_rows(self, start: int, count: int) -> torch.Tensor:
        """Keys and values of the committed tokens ``start`` .. ``start + count - 1``: (count, L, 2 * n_kv * hd)."""
        if start < 0 or start + count > self.length:
            raise ValueError(f"rows {start}..{start + count - 1} are not committed (0..{self.length - 1} are)")
        rows = slice(start, start + count)
        return per_token_kv([(layer.keys[:1, :, rows], layer.values[:1, :, rows]) for layer in self._layers()])[0]

    @torch.inference_mode()
    def _compact_tail(self, start: int, keep: list[int]) -> None:
        """Move pending positions ``keep`` to ``start``, ``start + 1``, ... in place, then crop.

        Only the kept tail is gathered (and copied once); the committed prefix is not touched, where
        concatenating a new cache would copy every layer's whole prefix on each verify.
        """
        index = torch.tensor(keep, device=self._device()) + start
        end = start + len(keep)
        for layer in self._layers():
            layer.keys[:, :, start:end] = layer.keys[:, :, index]  # the gather copies before the write
            layer.values[:, :, start:end] = layer.values[:, :, index]
        self._crop_to(end)

    def _crop_to(self, length: int) -> None:
        # Sliced directly: Cache.crop's meaning changed across transformers versions.
        for layer in self._layers():
            if layer.keys is not None and layer.keys.shape[-2] > length:
                layer.keys = layer.keys[:, :, :length]
                layer.values = layer.values[:, :, :length]

    def _layers(self) -> list[Any]:
        """The cache's per-layer key/value holders (full-attention layers: ``.keys``, ``.values``)."""
        return list(self.cache.layers)

    def _device(self) -> torch.device:
        return self._layers()[0].keys.device


def per_token_kv(layers: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """Every layer's keys and values, each (B, n_kv, T, hd), laid out per token as the drafts read them:
    (B, T, L, 2 * n_kv * hd), per layer and KV head ``[K_h | V_h]``."""
    per_layer = []
    for k, v in layers:
        kv = torch.cat([k, v], dim=-1).transpose(1, 2)  # (B, T, n_kv, 2 hd)
        per_layer.append(kv.reshape(kv.shape[0], kv.shape[1], -1))  # (B, T, n_kv * 2 hd)
    return torch.stack(per_layer, dim=2)  # (B, T, L, 2 n_kv hd)
