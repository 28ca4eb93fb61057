"""Vectors on the wire: a backend's :class:`Activations` as the named float16 tensors of a reply.

Names follow :mod:`drafts.protocol.messages`: ``"hidden:<layer>"`` (m, H), ``"kv"`` (m, L, W)
and ``"memory"`` (m, H). float16 halves float32's bytes and is what the draft runs in on most
clients; its range (65,504) holds the activations of the targets we serve.
"""

from __future__ import annotations

import torch

from drafts.target.activations import Activations

PAYLOAD = "float16"  # Capabilities.payload
_DTYPE = torch.float16


def to_wire(vectors: Activations) -> dict[str, torch.Tensor]:
    """The activations of a reply, by wire name."""
    out = {f"hidden:{layer}": h.to("cpu", _DTYPE) for layer, h in sorted(vectors.hidden.items())}
    if vectors.kv is not None:
        out["kv"] = vectors.kv.to("cpu", _DTYPE)
    if vectors.memory is not None:
        out["memory"] = vectors.memory.to("cpu", _DTYPE)
    return out
