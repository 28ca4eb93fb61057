"""A KV cache that appends in place: each layer keeps spare room, so a step copies only its new tokens.

transformers' ``DynamicLayer`` concatenates on every update, copying every layer's whole prefix on
each forward (at a few thousand tokens that is tens of MB per decode step). ``GrowingLayer`` keeps a
larger buffer and exposes ``keys``/``values`` as prefix views of it, so the attention reads exactly
the same numbers. Anything that replaces ``keys``/``values`` from outside (a crop, a compaction, a
slot selection) keeps working: the next update notices that they are no longer a prefix of the
buffer and copies them into a fresh one once.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer

SPARE_MIN = 256  # positions of spare room at least, per growth


class GrowingLayer(DynamicLayer):
    """``DynamicLayer`` with amortised in-place appends."""

    _key_buffer: torch.Tensor | None = None
    _value_buffer: torch.Tensor | None = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length, new = self._length(), key_states.shape[-2]
        if not self._backed(length + new):
            self._regrow(key_states, value_states, length, length + new)
        assert self._key_buffer is not None and self._value_buffer is not None
        self._key_buffer[:, :, length : length + new] = key_states
        self._value_buffer[:, :, length : length + new] = value_states
        self.keys = self._key_buffer[:, :, : length + new]
        self.values = self._value_buffer[:, :, : length + new]
        return self.keys, self.values

    def _length(self) -> int:
        return 0 if self.keys is None or self.keys.numel() == 0 else int(self.keys.shape[-2])

    def _backed(self, needed: int) -> bool:
        """Whether keys/values are still prefix views of the buffers, with room for ``needed`` positions."""
        kb, vb, k, v = self._key_buffer, self._value_buffer, self.keys, self.values
        if kb is None or vb is None or k is None or v is None or kb.shape[-2] < needed:
            return False
        if k.numel() == 0:  # lazily initialised, nothing held yet
            return False
        if kb.is_inference() and not torch.is_inference_mode_enabled():  # written in inference mode, now not
            return False
        return _is_prefix_view(k, kb) and _is_prefix_view(v, vb)

    def _regrow(self, key_states: torch.Tensor, value_states: torch.Tensor, length: int, needed: int) -> None:
        """Fresh buffers with spare room, holding the current ``length`` positions."""
        capacity = needed + max(SPARE_MIN, needed // 2)
        self._key_buffer = _buffer(key_states, self.keys, length, capacity)
        self._value_buffer = _buffer(value_states, self.values, length, capacity)


def _is_prefix_view(view: torch.Tensor, buffer: torch.Tensor) -> bool:
    return (
        view.data_ptr() == buffer.data_ptr()
        and view.stride() == buffer.stride()
        and view.shape[:2] == buffer.shape[:2]
        and view.shape[-1] == buffer.shape[-1]
    )


def _buffer(like: torch.Tensor, current: torch.Tensor | None, length: int, capacity: int) -> torch.Tensor:
    """(b, h, capacity, d) shaped after ``like`` (new states), holding ``current``'s first ``length`` positions."""
    b, h, _, d = like.shape
    buffer = like.new_empty(b, h, capacity, d)
    if length and current is not None:
        buffer[:, :, :length] = current[:, :, :length]
    return buffer


class GrowingCache(DynamicCache):
    """A ``DynamicCache`` made of ``GrowingLayer``s (full-length layers for every layer type, like the default)."""

    def __init__(self) -> None:
        Cache.__init__(self, layer_class_to_replicate=GrowingLayer)
