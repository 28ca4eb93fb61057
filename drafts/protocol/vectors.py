"""Vectors on the wire: a draft's :class:`Activations` as the named tensors of a reply, and back.

Both ends use this module: the verifier encodes what it computed for the committed tokens
(:func:`to_wire`), the client decodes it into what its draft observes (:func:`from_wire`).
Names follow :mod:`drafts.protocol.messages`::

    "hidden:<layer>"  (m, H)      a hidden state (EAGLE reads the final one)
    "kv"              (m, L, W)   every layer's keys/values (MoA's Layer Self-Attention input)
    "memory"          (m, H)      MoA's memory vectors, compressed by the verifier (:data:`MEMORY`)

An int8 entry ``name`` comes with a float32 ``name + ".scale"`` (one absmax scale per row, see
:func:`drafts.protocol.tensors.quantize_int8`); :func:`from_wire` dequantises it.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from drafts.errors import MalformedFrameError
from drafts.protocol.tensors import dequantize_int8
from drafts.target.activations import Activations

MEMORY = "memory"  # Needs.compressed of a MoA draft whose Layer Self-Attention + Ekv2E runs on the verifier
HIDDEN_PREFIX = "hidden:"
KV = "kv"
SCALE_SUFFIX = ".scale"


def to_wire(vectors: Activations, dtype: torch.dtype = torch.float16) -> dict[str, torch.Tensor]:
    """The activations of a reply, by wire name, on the CPU in ``dtype``."""
    out = {f"{HIDDEN_PREFIX}{layer}": h.to("cpu", dtype) for layer, h in sorted(vectors.hidden.items())}
    if vectors.kv is not None:
        out[KV] = vectors.kv.to("cpu", dtype)
    if vectors.memory is not None:
        out[MEMORY] = vectors.memory.to("cpu", dtype)
    return out


def from_wire(
    activations: Mapping[str, torch.Tensor], dtype: torch.dtype, device: torch.device | str = "cpu"
) -> Activations:
    """The :class:`Activations` a reply carries, in the draft's ``dtype`` on its ``device``.

    Raises MalformedFrameError for a name this protocol does not define (a newer server's
    payload that this client cannot read: update the client).
    """
    hidden: dict[int, torch.Tensor] = {}
    kv = memory = None
    for name, tensor in activations.items():
        if name.endswith(SCALE_SUFFIX):
            continue  # read with the tensor it scales
        value = _dequantized(name, tensor, activations).to(device=device, dtype=dtype)
        if name.startswith(HIDDEN_PREFIX) and name[len(HIDDEN_PREFIX) :].isdigit():
            hidden[int(name[len(HIDDEN_PREFIX) :])] = value
        elif name == KV:
            kv = value
        elif name == MEMORY:
            memory = value
        else:
            raise MalformedFrameError(
                f"the server sent activations {name!r}, which this client cannot read; update moa-chat"
            )
    return Activations(hidden, kv, memory)


def _dequantized(name: str, tensor: torch.Tensor, activations: Mapping[str, torch.Tensor]) -> torch.Tensor:
    if tensor.dtype != torch.int8:
        return tensor
    scale = activations.get(name + SCALE_SUFFIX)
    if scale is None or scale.shape != (*tensor.shape[:-1], 1):
        raise MalformedFrameError(
            f"int8 activations {name!r} need a {name + SCALE_SUFFIX!r} of shape {(*tensor.shape[:-1], 1)}; "
            "the server's quantised payload is incomplete"
        )
    return dequantize_int8(tensor, scale)
