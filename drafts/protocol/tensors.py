"""Tensor payloads on the wire: an explicit dtype and shape, then raw little-endian bytes.

A tensor travels as a spec ``{"dtype": "float16", "shape": [m, L, W]}`` plus exactly
``numel * itemsize`` bytes in C order. Nothing is pickled and nothing is inferred: the receiver
checks the dtype against :data:`WIRE_DTYPES`, every dimension, the element count against its
limit and the byte count against the spec *before* it allocates anything.

Activations may be sent int8-quantised (:func:`quantize_int8`), one absmax scale per row (the
last dimension). With ``s = absmax(row) / 127`` held in float32 and ``x' = dequantize_int8(...)``,
every element of the row satisfies

    |x - x'| <= s * (1/2 + 2**-16)

The 1/2 is round-to-nearest of ``x / s`` to an integer in [-127, 127]; the 2**-16 term covers
the float32 rounding of ``x / s`` and of ``q * s`` (each at most 127 * 2**-24 in units of
``s``). The bound holds for finite inputs whose ``s`` is a normal float32 (> ~1.2e-38, always
true for float16/bfloat16 activations); all-zero rows round-trip exactly.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from drafts.errors import FrameTooLargeError, MalformedFrameError

WIRE_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int8": torch.int8,  # int8-quantised activations (quantize_int8)
    "uint8": torch.uint8,
    "bool": torch.bool,
}
DTYPE_NAMES: dict[torch.dtype, str] = {dtype: name for name, dtype in WIRE_DTYPES.items()}
MAX_NDIM = 8  # no payload of this protocol has more; bounds the work of checking a spec
DEFAULT_MAX_ELEMENTS = 2**24  # per tensor, when the caller names no limit (q of 256 x 49152 fits)


@dataclass(frozen=True)
class TensorSpec:
    """What a tensor's bytes mean: validated at construction, so the sizes below are bounded."""

    dtype: str  # a key of WIRE_DTYPES
    shape: tuple[int, ...]

    @classmethod
    def parse(cls, dtype: object, shape: object, max_elements: int = DEFAULT_MAX_ELEMENTS) -> TensorSpec:
        """Check a spec read off the wire; raises MalformedFrameError or FrameTooLargeError."""
        if not isinstance(dtype, str) or dtype not in WIRE_DTYPES:
            raise MalformedFrameError(f"unknown tensor dtype {dtype!r}; send one of {', '.join(WIRE_DTYPES)}")
        if not isinstance(shape, list | tuple) or len(shape) > MAX_NDIM:
            raise MalformedFrameError(f"tensor shape must be a list of at most {MAX_NDIM} ints, got {shape!r:.80}")
        numel = 1
        for dim in shape:
            if not isinstance(dim, int) or isinstance(dim, bool) or dim < 0:
                raise MalformedFrameError(f"tensor dimensions must be ints >= 0, got {dim!r:.40} in the shape")
            if dim > max_elements:
                raise FrameTooLargeError(f"tensor dimension {dim} is over the limit of {max_elements} elements")
            numel *= dim  # both factors are <= max_elements, so this stays small before the check below
            if numel > max_elements:
                raise FrameTooLargeError(
                    f"tensor of shape {list(shape)} has over {max_elements} elements; send it in smaller pieces"
                )
        return cls(dtype, tuple(shape))

    @property
    def torch_dtype(self) -> torch.dtype:
        return WIRE_DTYPES[self.dtype]

    @property
    def numel(self) -> int:
        numel = 1
        for dim in self.shape:
            numel *= dim
        return numel

    @property
    def nbytes(self) -> int:
        return self.numel * self.torch_dtype.itemsize

    def to_dict(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": list(self.shape)}


def spec_of(tensor: torch.Tensor) -> TensorSpec:
    """The wire spec of ``tensor``; raises ValueError for a dtype the protocol does not carry."""
    if tensor.dtype not in DTYPE_NAMES:
        raise ValueError(f"dtype {tensor.dtype} cannot go on the wire; convert to one of {', '.join(WIRE_DTYPES)}")
    return TensorSpec(DTYPE_NAMES[tensor.dtype], tuple(tensor.shape))


def encode_tensor(tensor: torch.Tensor) -> tuple[dict[str, Any], bytes]:
    """(spec dict, raw little-endian C-order bytes) of ``tensor``; the bytes are exact, NaNs included."""
    spec = spec_of(tensor)
    flat = tensor.detach().to("cpu").contiguous().reshape(-1)
    raw = flat.view(torch.uint8)  # (numel * itemsize,) same bytes, any dtype
    if sys.byteorder == "big":
        raw = byteswap(raw, flat.element_size())
    return spec.to_dict(), raw.numpy().tobytes()


def decode_tensor(
    spec: Mapping[str, Any] | TensorSpec, data: bytes | memoryview, max_elements: int = DEFAULT_MAX_ELEMENTS
) -> torch.Tensor:
    """The tensor that ``spec`` and ``data`` describe, in its own memory; raises ProtocolError if they disagree."""
    if not isinstance(spec, TensorSpec):
        spec = TensorSpec.parse(spec.get("dtype"), spec.get("shape"), max_elements)
    if len(data) != spec.nbytes:
        raise MalformedFrameError(
            f"a {spec.dtype} tensor of shape {list(spec.shape)} needs {spec.nbytes} bytes, got {len(data)}"
        )
    if spec.numel == 0:
        return torch.empty(spec.shape, dtype=spec.torch_dtype)
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)  # (nbytes,) a private copy
    if sys.byteorder == "big":
        raw = byteswap(raw, spec.torch_dtype.itemsize)
    if spec.dtype == "bool" and bool((raw > 1).any()):
        raise MalformedFrameError("a bool tensor holds bytes other than 0 and 1; send bools as 0/1 bytes")
    return raw.view(spec.torch_dtype).reshape(spec.shape)


def byteswap(raw: torch.Tensor, itemsize: int) -> torch.Tensor:
    """Reverse the byte order of each ``itemsize``-byte element of the flat uint8 tensor ``raw``."""
    if itemsize == 1:
        return raw
    return raw.reshape(-1, itemsize).flip(-1).reshape(-1)


def quantize_int8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row absmax int8 quantisation of ``x`` (..., D): (q int8 (..., D), scale float32 (..., 1)).

    The error bound is in the module docstring. Raises ValueError for non-finite input.
    """
    x = x.detach().float()
    if not bool(torch.isfinite(x).all()):
        raise ValueError("cannot quantise non-finite activations; check the target's forward pass")
    scale = x.abs().amax(dim=-1, keepdim=True) / 127.0  # (..., 1)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))  # all-zero rows: q = 0 exactly
    q = torch.round(x / safe).clamp_(-127, 127).to(torch.int8)  # (..., D)
    return q, scale


def dequantize_int8(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """float32 (..., D) from :func:`quantize_int8`'s (q, scale)."""
    return q.float() * scale.float()
