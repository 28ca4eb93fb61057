"""One binary frame per message: the wire format of :mod:`drafts.protocol.messages`.

A frame is::

    b"MOA" | wire version (1 byte) | header length (4 bytes, big-endian) | header | tensor bytes

The header is a UTF-8 JSON object: ``{"type": "verify", <scalar fields>..., "tensors": [...]}``.
Each tensor entry is ``{"name", "dtype", "shape", "offset", "nbytes"}``, ``offset`` counted from
the first byte after the header; the tensors tile that region in order, with no gaps, overlaps
or trailing bytes. A message's tensor fields are named after the field (``"tokens"``, ``"q"``),
its activations ``"activations/<key>"``; an optional tensor that is None is simply absent.
Optional scalar fields are always present (``null``). Nothing is evaluated or unpickled.

:func:`decode` checks the frame against the receiver's :class:`Limits` before it allocates
anything, and refuses every malformed input with a :class:`~drafts.errors.ProtocolError`
subclass whose ``code`` is what the session reports and whose message names the fix.

Bytes per accepted token (SmolLM2-135M: 30 layers, 3 KV heads x 64 dims, so "kv" is 30 x 384
values per token; measured, and kept honest by ``tests/drafts/protocol/test_codec.py``). A
Verified frame costs a fixed ~230 bytes (prefix, JSON header with the tensor table), 8 bytes per
accepted tree index, plus the activations of every token it commits (the root and the accepted
nodes, m = 1 + accepted):

    activations sent                               bytes per committed token   frame, m = 4
    all-layer KV, float16 "kv" (m, 30, 384)                 23,040                 92,479
    all-layer KV, int8 "kv" + float32 "kv.scale" (m, 30, 1) 11,640                 46,971
    compact "memory" vector, float16 (m, 576)                1,152                  4,927
    nothing (the draft needs no activations)                     0                    229

So the all-layer KV costs 20x (float16) or ~10x (int8, max error 1/254 of each row's absmax) the
bytes of a 576-float16 memory vector computed on the server: at 3 accepted tokens per round,
~92 KB vs ~5 KB a round, i.e. ~7 Mbit/s vs ~0.4 Mbit/s at 10 rounds a second.
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
from collections.abc import Mapping
from enum import Enum
from typing import Any

import torch

from drafts.errors import (
    FrameTooLargeError,
    MalformedFrameError,
    ProtocolError,
    UnsupportedVersionError,
)
from drafts.protocol.checks import MAX_INT
from drafts.protocol.limits import Limits
from drafts.protocol.messages import (
    Message,
    MessageType,
)
from drafts.protocol.readers import DECODERS as _DECODERS
from drafts.protocol.readers import Fields as _Fields
from drafts.protocol.readers import TensorFields as _Tensors
from drafts.protocol.readers import is_int as _is_int
from drafts.protocol.tensors import TensorSpec, decode_tensor, encode_tensor

MAGIC = b"MOA"
WIRE_VERSION = 1  # the framing below; the message set has its own PROTOCOL_VERSION
_PREFIX = struct.Struct(">3sBI")  # magic, wire version, header length
PREFIX_BYTES = _PREFIX.size
_TENSOR_FIELDS = ("tokens", "parents", "q", "q_indices", "q_weights", "accepted", "stop_tokens")
_GROUP = "activations"  # the one field that is a dict of tensors
_TENSOR_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,64}")
_TENSOR_ENTRY_KEYS = ("name", "dtype", "shape", "offset", "nbytes")


# -- encoding ------------------------------------------------------------------------------------


def encode(message: Message) -> bytes:
    """The frame of ``message``."""
    fields, tensors = _split_fields(message)
    entries: list[dict[str, Any]] = []
    chunks: list[bytes] = []
    offset = 0
    for name, tensor in tensors.items():
        spec, raw = encode_tensor(tensor)
        entries.append({"name": name, **spec, "offset": offset, "nbytes": len(raw)})
        chunks.append(raw)
        offset += len(raw)
    header = {"type": message.TYPE.value, **fields, "tensors": entries}
    header_bytes = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    if len(header_bytes) >= 2**32:
        raise FrameTooLargeError(f"a {message.TYPE.value} header of {len(header_bytes)} bytes does not fit a frame")
    return b"".join([_PREFIX.pack(MAGIC, WIRE_VERSION, len(header_bytes)), header_bytes, *chunks])


def _split_fields(message: Message) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """(JSON fields, tensors by frame name) of a message."""
    fields: dict[str, Any] = {}
    tensors: dict[str, torch.Tensor] = {}
    for f in dataclasses.fields(message):
        value = getattr(message, f.name)
        if f.name in _TENSOR_FIELDS:
            if value is not None:
                tensors[f.name] = value
        elif f.name == _GROUP:
            tensors.update({f"{_GROUP}/{key}": tensor for key, tensor in value.items()})
        else:
            fields[f.name] = _to_json(value)
    return fields, tensors


def _to_json(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


# -- decoding ------------------------------------------------------------------------------------


def decode(data: bytes, limits: Limits) -> Message:
    """The message in one frame; raises a ProtocolError subclass for anything malformed or too large."""
    header, region = _split_frame(data, limits)
    request_id: Any = header.get("request_id")
    try:
        fields = _Fields(header, "frame header")
        kind = _message_type(fields.text("type"))
        fields.where = kind.value
        tensors = _Tensors(_read_tensors(fields.entries("tensors"), region, limits), kind.value)
        message = _DECODERS[kind](fields, tensors, limits)
        fields.finish()
        tensors.finish()
        return message
    except ProtocolError as exc:
        if _is_int(request_id) and 0 <= request_id <= MAX_INT and header.get("type") != MessageType.CANCEL.value:
            exc.request_id = request_id  # so the Error reply answers the request the frame belonged to
            # (not a Cancel's: its request_id names another request, which must get its own reply)
        raise


def _split_frame(data: bytes, limits: Limits) -> tuple[dict[str, Any], memoryview]:
    """(header object, tensor region) of a frame, after checking its prefix and sizes."""
    if len(data) > limits.max_frame_bytes:
        raise FrameTooLargeError(
            f"a frame of {len(data)} bytes is over this end's limit of {limits.max_frame_bytes}; "
            "send fewer tokens per request (prefill in chunks, verify smaller trees)"
        )
    if len(data) < PREFIX_BYTES:
        raise MalformedFrameError(f"a frame of {len(data)} bytes is truncated: the prefix alone is {PREFIX_BYTES}")
    magic, version, header_length = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise MalformedFrameError(f"not a moa-chat frame (starts {bytes(data[:4])!r}); connect to a moa-chat verifier")
    if version != WIRE_VERSION:
        raise UnsupportedVersionError(
            f"frame uses wire format {version}, this end speaks {WIRE_VERSION}; update moa-chat on the older side"
        )
    if header_length > limits.max_header_bytes:
        raise FrameTooLargeError(f"a header of {header_length} bytes is over the limit of {limits.max_header_bytes}")
    end = PREFIX_BYTES + header_length
    if end > len(data):
        follow = len(data) - PREFIX_BYTES
        raise MalformedFrameError(f"frame truncated: its header needs {header_length} bytes, {follow} follow")
    return _parse_header(bytes(data[PREFIX_BYTES:end])), memoryview(data)[end:]


def _parse_header(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise MalformedFrameError(f"frame header is not UTF-8 JSON ({exc}); encode frames with codec.encode") from exc
    if not isinstance(value, dict):
        raise MalformedFrameError(f"frame header must be a JSON object, got {type(value).__name__}")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise MalformedFrameError("frame header repeats a key; send each field once")
    return obj


def _no_constants(name: str) -> None:
    raise MalformedFrameError(f"frame header holds {name}; every number must be finite")


def _message_type(name: str) -> MessageType:
    try:
        return MessageType(name)
    except ValueError:
        known = ", ".join(t.value for t in MessageType)
        raise MalformedFrameError(f"unknown message type {name!r:.40}; this end knows {known}") from None


def _read_tensors(entries: list[Any], region: memoryview, limits: Limits) -> dict[str, torch.Tensor]:
    """Check every tensor entry against the region and the limits, then (only then) copy the tensors out."""
    if len(entries) > limits.max_tensors:
        raise FrameTooLargeError(f"a frame with {len(entries)} tensors is over the limit of {limits.max_tensors}")
    checked: dict[str, tuple[TensorSpec, int]] = {}
    offset = 0
    for entry in entries:
        name, spec, start = _tensor_entry(entry, limits)
        if name in checked:
            raise MalformedFrameError(f"tensor {name!r} appears twice; send each tensor once")
        if start != offset:
            problem = "overlaps the tensor before it" if start < offset else "leaves a gap after the tensor before it"
            raise MalformedFrameError(f"tensor {name!r} at offset {start} {problem}; tensors must tile in order")
        offset = start + spec.nbytes
        if offset > len(region):
            raise MalformedFrameError(
                f"tensor {name!r} ends at byte {offset} of a {len(region)}-byte payload: out of bounds or truncated"
            )
        checked[name] = (spec, start)
    if offset != len(region):
        raise MalformedFrameError(f"{len(region) - offset} trailing bytes after the last tensor; send exact frames")
    return {name: decode_tensor(spec, region[start : start + spec.nbytes]) for name, (spec, start) in checked.items()}


def _tensor_entry(entry: Any, limits: Limits) -> tuple[str, TensorSpec, int]:
    if not isinstance(entry, dict):
        raise MalformedFrameError(f"each tensor entry must be an object with {', '.join(_TENSOR_ENTRY_KEYS)}")
    fields = _Fields(entry, "tensor entry")
    name = fields.text("name")
    if not _TENSOR_NAME.fullmatch(name):
        raise MalformedFrameError(f"tensor name {name!r:.80} must be 1-64 of A-Z a-z 0-9 _ . : / -")
    fields.where = f"tensor {name!r}"
    try:
        spec = TensorSpec.parse(fields.raw("dtype"), fields.raw("shape"), limits.max_tensor_elements)
    except ProtocolError as exc:
        raise type(exc)(f"tensor {name!r}: {exc}") from None
    start, nbytes = fields.integer("offset"), fields.integer("nbytes")
    fields.finish()
    if nbytes != spec.nbytes:
        raise MalformedFrameError(f"tensor {name!r} claims {nbytes} bytes, its dtype and shape need {spec.nbytes}")
    return name, spec, start
