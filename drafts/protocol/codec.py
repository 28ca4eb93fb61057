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
import math
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch

from drafts.errors import (
    ConfigError,
    ErrorCode,
    FrameTooLargeError,
    MalformedFrameError,
    ProtocolError,
    TreeTooLargeError,
    UnsupportedVersionError,
)
from drafts.protocol.messages import (
    MAX_INT,
    Bye,
    Capabilities,
    Error,
    Hello,
    Message,
    MessageType,
    Needs,
    Prefill,
    Prefilled,
    Rewind,
    Rewound,
    Timings,
    Verified,
    Verify,
    Welcome,
)
from drafts.protocol.tensors import TensorSpec, decode_tensor, encode_tensor
from drafts.sampling import SamplingConfig

MAGIC = b"MOA"
WIRE_VERSION = 1  # the framing below; the message set has its own PROTOCOL_VERSION
_PREFIX = struct.Struct(">3sBI")  # magic, wire version, header length
PREFIX_BYTES = _PREFIX.size
_TENSOR_FIELDS = ("tokens", "parents", "q", "accepted")
_GROUP = "activations"  # the one field that is a dict of tensors
_TENSOR_NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,64}")
_TENSOR_ENTRY_KEYS = ("name", "dtype", "shape", "offset", "nbytes")


@dataclass(frozen=True)
class Limits:
    """What a receiver accepts; checked before anything is allocated."""

    max_frame_bytes: int = 64 * 2**20  # a Prefilled of 2048 SmolLM2 tokens with float16 KV is 47 MB
    max_header_bytes: int = 64 * 2**10  # real headers are under 2 KB
    max_tensors: int = 64  # per frame: a few fields plus the activations a draft needs
    max_tensor_elements: int = 2**24  # per tensor: q of 256 nodes x 49,152 tokens is 12.6 M
    max_tree_nodes: int = 256  # drafted nodes per Verify; one target pass runs over them all

    def __post_init__(self) -> None:
        for name, value in dataclasses.asdict(self).items():
            if value <= 0:
                raise ConfigError(f"Limits.{name} must be > 0, got {value}")


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
        if _is_int(request_id) and 0 <= request_id <= MAX_INT:
            exc.request_id = request_id  # so the Error reply answers the request the frame belonged to
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


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Fields:
    """A header object whose fields are read once each, type-checked, with errors that name the field."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.data = data
        self.where = where
        self.read: set[str] = set()

    def raw(self, name: str) -> Any:
        if name not in self.data:
            raise MalformedFrameError(f"{self.where} has no field {name!r}; every field is required (null if unset)")
        self.read.add(name)
        return self.data[name]

    def _wrong(self, name: str, want: str, value: Any) -> MalformedFrameError:
        return MalformedFrameError(f"{self.where}.{name} must be {want}, got {type(value).__name__} {value!r:.40}")

    def integer(self, name: str) -> int:
        value = self.raw(name)
        if not _is_int(value) or not 0 <= value <= MAX_INT:
            raise self._wrong(name, "an int in [0, 2**53)", value)
        return int(value)

    def optional_integer(self, name: str) -> int | None:
        return None if self.raw(name) is None else self.integer(name)

    def number(self, name: str) -> float:
        value = self.raw(name)
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise self._wrong(name, "a finite number", value)
        return float(value)

    def flag(self, name: str) -> bool:
        value = self.raw(name)
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false", value)
        return value

    def text(self, name: str) -> str:
        value = self.raw(name)
        if not isinstance(value, str):
            raise self._wrong(name, "a string", value)
        return value

    def optional_text(self, name: str) -> str | None:
        return None if self.raw(name) is None else self.text(name)

    def integers(self, name: str) -> tuple[int, ...]:
        value = self.raw(name)
        if not isinstance(value, list) or not all(_is_int(v) and 0 <= v <= MAX_INT for v in value):
            raise self._wrong(name, "a list of ints >= 0", value)
        return tuple(value)

    def scalars(self, name: str) -> dict[str, str | int]:
        value = self.raw(name)
        if not isinstance(value, dict) or not all(isinstance(v, str) or _is_int(v) for v in value.values()):
            raise self._wrong(name, "an object of strings and ints", value)
        return dict(value)

    def entries(self, name: str) -> list[Any]:
        value = self.raw(name)
        if not isinstance(value, list):
            raise self._wrong(name, "a list", value)
        return value

    def section(self, name: str, build: Callable[[_Fields], Any]) -> Any:
        """Build a nested value from the object in field ``name``."""
        value = self.raw(name)
        if not isinstance(value, dict):
            raise self._wrong(name, "an object", value)
        nested = _Fields(value, f"{self.where}.{name}")
        built = build(nested)
        nested.finish()
        return built

    def finish(self) -> None:
        extra = sorted(set(self.data) - self.read)
        if extra:
            raise MalformedFrameError(
                f"{self.where} has unexpected field(s) {', '.join(map(repr, extra))[:200]}; "
                "remove them or update moa-chat on the older side"
            )


class _Tensors:
    """A frame's tensors, taken once each by the message decoder."""

    def __init__(self, tensors: dict[str, torch.Tensor], where: str) -> None:
        self.tensors = tensors
        self.where = where

    def take(self, name: str) -> torch.Tensor:
        if name not in self.tensors:
            raise MalformedFrameError(f"{self.where} has no tensor {name!r}; it is required")
        return self.tensors.pop(name)

    def optional(self, name: str) -> torch.Tensor | None:
        return self.tensors.pop(name, None)

    def group(self, prefix: str) -> dict[str, torch.Tensor]:
        names = [name for name in self.tensors if name.startswith(f"{prefix}/") and len(name) > len(prefix) + 1]
        return {name.removeprefix(f"{prefix}/"): self.tensors.pop(name) for name in names}

    def finish(self) -> None:
        if self.tensors:
            raise MalformedFrameError(
                f"{self.where} has unexpected tensor(s) {', '.join(map(repr, self.tensors))[:200]}; remove them"
            )


# -- one decoder per message type ---------------------------------------------------------------

_Decoder = Callable[[_Fields, _Tensors, Limits], Message]


def _hello(f: _Fields, t: _Tensors, limits: Limits) -> Hello:
    return Hello(
        protocol_version=f.integer("protocol_version"),
        client=f.text("client"),
        target=f.scalars("target"),
        draft_id=f.text("draft_id"),
        needs=f.section("needs", _needs),
        resume_session=f.optional_text("resume_session"),
        resume_length=f.optional_integer("resume_length"),
    )


def _needs(f: _Fields) -> Needs:
    return Needs(f.integers("hidden_layers"), f.flag("all_layer_kv"), f.optional_text("compressed"))


def _welcome(f: _Fields, t: _Tensors, limits: Limits) -> Welcome:
    return Welcome(
        protocol_version=f.integer("protocol_version"),
        session_id=f.text("session_id"),
        target=f.scalars("target"),
        capabilities=f.section("capabilities", _capabilities),
        resumed=f.flag("resumed"),
        committed=f.integer("committed"),
    )


def _capabilities(f: _Fields) -> Capabilities:
    return Capabilities(
        max_context=f.integer("max_context"),
        max_tree_nodes=f.integer("max_tree_nodes"),
        max_frame_bytes=f.integer("max_frame_bytes"),
        payload=f.text("payload"),
        batching=f.flag("batching"),
    )


def _prefill(f: _Fields, t: _Tensors, limits: Limits) -> Prefill:
    return Prefill(f.integer("request_id"), t.take("tokens"))


def _prefilled(f: _Fields, t: _Tensors, limits: Limits) -> Prefilled:
    return Prefilled(f.integer("request_id"), f.integer("committed"), t.group(_GROUP), f.section("timings", _timings))


def _verify(f: _Fields, t: _Tensors, limits: Limits) -> Verify:
    tokens = t.take("tokens")
    if tokens.numel() > limits.max_tree_nodes:
        raise TreeTooLargeError(
            f"a draft tree of {tokens.numel()} nodes is over this server's limit of {limits.max_tree_nodes}; "
            "draft smaller trees (see Welcome.capabilities.max_tree_nodes)"
        )
    return Verify(
        request_id=f.integer("request_id"),
        root_token=f.integer("root_token"),
        tokens=tokens,
        parents=t.take("parents"),
        q=t.optional("q"),
        sampling=f.section("sampling", _sampling),
    )


def _sampling(f: _Fields) -> SamplingConfig:
    temperature, top_k, top_p = f.number("temperature"), f.integer("top_k"), f.number("top_p")
    seed = f.optional_integer("seed")
    try:
        return SamplingConfig(temperature, top_k, top_p, seed)
    except ConfigError as exc:
        raise MalformedFrameError(f"{f.where}: {exc}") from None


def _verified(f: _Fields, t: _Tensors, limits: Limits) -> Verified:
    return Verified(
        request_id=f.integer("request_id"),
        accepted=t.take("accepted"),
        next_token=f.integer("next_token"),
        committed=f.integer("committed"),
        activations=t.group(_GROUP),
        timings=f.section("timings", _timings),
    )


def _timings(f: _Fields) -> Timings:
    return Timings(f.number("queue_ms"), f.number("forward_ms"))


def _rewind(f: _Fields, t: _Tensors, limits: Limits) -> Rewind:
    return Rewind(f.integer("request_id"), f.integer("length"))


def _rewound(f: _Fields, t: _Tensors, limits: Limits) -> Rewound:
    return Rewound(f.integer("request_id"), f.integer("committed"))


def _error(f: _Fields, t: _Tensors, limits: Limits) -> Error:
    request_id = f.optional_integer("request_id")
    code = f.text("code")
    known = [c.value for c in ErrorCode]
    if code not in known:
        raise MalformedFrameError(f"error.code {code!r:.40} is unknown; this end knows {', '.join(known)}")
    return Error(request_id, ErrorCode(code), f.text("message"), f.flag("fatal"))


def _bye(f: _Fields, t: _Tensors, limits: Limits) -> Bye:
    return Bye()


_DECODERS: dict[MessageType, _Decoder] = {
    MessageType.HELLO: _hello,
    MessageType.WELCOME: _welcome,
    MessageType.PREFILL: _prefill,
    MessageType.PREFILLED: _prefilled,
    MessageType.VERIFY: _verify,
    MessageType.VERIFIED: _verified,
    MessageType.REWIND: _rewind,
    MessageType.REWOUND: _rewound,
    MessageType.ERROR: _error,
    MessageType.BYE: _bye,
}
