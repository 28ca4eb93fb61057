"""Typed messages from a parsed frame header: each field read once, type-checked, and named in
every error. The frame layer around it lives in :mod:`drafts.protocol.codec`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from drafts.errors import (
    ConfigError,
    ErrorCode,
    MalformedFrameError,
    TreeTooLargeError,
)
from drafts.protocol.checks import MAX_INT
from drafts.protocol.limits import Limits
from drafts.protocol.messages import (
    Bye,
    Cancel,
    Capabilities,
    Error,
    Fetch,
    Fetched,
    Generate,
    Generated,
    Hello,
    Message,
    MessageType,
    Needs,
    Prefill,
    Prefilled,
    Propose,
    Rewind,
    Rewound,
    Timings,
    Verified,
    Verify,
    Welcome,
)
from drafts.sampling import SamplingConfig

_GROUP = "activations"  # the one field that is a dict of tensors


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Fields:
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
        if not is_int(value) or not 0 <= value <= MAX_INT:
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

    def added_text(self, name: str) -> str | None:
        """A field added after the first release of its message: absent (an older peer) reads as None."""
        return self.optional_text(name) if name in self.data else None

    def added_flag(self, name: str) -> bool:
        """A flag added after the first release of its message: absent (an older peer) reads as False."""
        return self.flag(name) if name in self.data else False

    def added_integer(self, name: str) -> int:
        """An int added after the first release of its message: absent (an older peer) reads as 0."""
        return self.integer(name) if name in self.data else 0

    def integers(self, name: str) -> tuple[int, ...]:
        value = self.raw(name)
        if not isinstance(value, list) or not all(is_int(v) and 0 <= v <= MAX_INT for v in value):
            raise self._wrong(name, "a list of ints >= 0", value)
        return tuple(value)

    def scalars(self, name: str) -> dict[str, str | int]:
        value = self.raw(name)
        if not isinstance(value, dict) or not all(isinstance(v, str) or is_int(v) for v in value.values()):
            raise self._wrong(name, "an object of strings and ints", value)
        return dict(value)

    def entries(self, name: str) -> list[Any]:
        value = self.raw(name)
        if not isinstance(value, list):
            raise self._wrong(name, "a list", value)
        return value

    def section(self, name: str, build: Callable[[Fields], Any]) -> Any:
        """Build a nested value from the object in field ``name``."""
        value = self.raw(name)
        if not isinstance(value, dict):
            raise self._wrong(name, "an object", value)
        nested = Fields(value, f"{self.where}.{name}")
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


class TensorFields:
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

_Decoder = Callable[[Fields, TensorFields, Limits], Message]


def _hello(f: Fields, t: TensorFields, limits: Limits) -> Hello:
    return Hello(
        protocol_version=f.integer("protocol_version"),
        client=f.text("client"),
        target=f.scalars("target"),
        draft_id=f.text("draft_id"),
        needs=f.section("needs", _needs),
        resume_session=f.optional_text("resume_session"),
        resume_length=f.optional_integer("resume_length"),
    )


def _needs(f: Fields) -> Needs:
    return Needs(f.integers("hidden_layers"), f.flag("all_layer_kv"), f.optional_text("compressed"))


def _welcome(f: Fields, t: TensorFields, limits: Limits) -> Welcome:
    return Welcome(
        protocol_version=f.integer("protocol_version"),
        session_id=f.text("session_id"),
        target=f.scalars("target"),
        capabilities=f.section("capabilities", _capabilities),
        resumed=f.flag("resumed"),
        committed=f.integer("committed"),
    )


def _capabilities(f: Fields) -> Capabilities:
    return Capabilities(
        max_context=f.integer("max_context"),
        max_tree_nodes=f.integer("max_tree_nodes"),
        max_frame_bytes=f.integer("max_frame_bytes"),
        payload=f.text("payload"),
        batching=f.flag("batching"),
        device_kind=f.added_text("device_kind"),
        propose=f.added_flag("propose"),
        later=f.added_flag("later"),
    )


def _prefill(f: Fields, t: TensorFields, limits: Limits) -> Prefill:
    return Prefill(f.integer("request_id"), t.take("tokens"), f.added_flag("later"))


def _fetch(f: Fields, t: TensorFields, limits: Limits) -> Fetch:
    return Fetch(f.integer("request_id"), f.integer("start"), f.integer("length"))


def _fetched(f: Fields, t: TensorFields, limits: Limits) -> Fetched:
    return Fetched(f.integer("request_id"), f.integer("start"), t.group(_GROUP))


def _prefilled(f: Fields, t: TensorFields, limits: Limits) -> Prefilled:
    return Prefilled(f.integer("request_id"), f.integer("committed"), t.group(_GROUP), f.section("timings", _timings))


def _verify(f: Fields, t: TensorFields, limits: Limits) -> Verify:
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
        q_indices=t.optional("q_indices"),
        q_weights=t.optional("q_weights"),
    )


def _sampling(f: Fields) -> SamplingConfig:
    temperature, top_k, top_p = f.number("temperature"), f.integer("top_k"), f.number("top_p")
    seed = f.optional_integer("seed")
    try:
        return SamplingConfig(temperature, top_k, top_p, seed)
    except ConfigError as exc:
        raise MalformedFrameError(f"{f.where}: {exc}") from None


def _verified(f: Fields, t: TensorFields, limits: Limits) -> Verified:
    return Verified(
        request_id=f.integer("request_id"),
        accepted=t.take("accepted"),
        next_token=f.integer("next_token"),
        committed=f.integer("committed"),
        activations=t.group(_GROUP),
        timings=f.section("timings", _timings),
    )


def _timings(f: Fields) -> Timings:
    return Timings(f.number("queue_ms"), f.number("forward_ms"))


def _rewind(f: Fields, t: TensorFields, limits: Limits) -> Rewind:
    return Rewind(f.integer("request_id"), f.integer("length"))


def _rewound(f: Fields, t: TensorFields, limits: Limits) -> Rewound:
    return Rewound(f.integer("request_id"), f.integer("committed"))


def _generate(f: Fields, t: TensorFields, limits: Limits) -> Generate:
    return Generate(
        request_id=f.integer("request_id"),
        root_token=f.integer("root_token"),
        max_new_tokens=f.integer("max_new_tokens"),
        stop_tokens=t.take("stop_tokens"),
        sampling=f.section("sampling", _sampling),
        propose=f.added_flag("propose"),
    )


def _generated(f: Fields, t: TensorFields, limits: Limits) -> Generated:
    return Generated(
        request_id=f.integer("request_id"),
        tokens=t.take("tokens"),
        committed=f.integer("committed"),
        done=f.flag("done"),
        timings=f.section("timings", _timings),
        cancelled=f.flag("cancelled"),
        drafted=f.added_integer("drafted"),
        activations=t.group(_GROUP),
    )


def _propose(f: Fields, t: TensorFields, limits: Limits) -> Propose:
    tokens = t.take("tokens")
    if tokens.numel() > limits.max_proposal_nodes:
        raise TreeTooLargeError(
            f"propose.tokens: a proposal of {tokens.numel()} nodes is over this end's limit of "
            f"{limits.max_proposal_nodes}; propose smaller trees (a step verifies at most "
            "Welcome.capabilities.max_tree_nodes of them)"
        )
    return Propose(
        request_id=f.integer("request_id"),
        base=f.integer("base"),
        tokens=tokens,
        parents=t.take("parents"),
        q=t.optional("q"),
        q_indices=t.optional("q_indices"),
        q_weights=t.optional("q_weights"),
    )


def _error(f: Fields, t: TensorFields, limits: Limits) -> Error:
    request_id = f.optional_integer("request_id")
    code = f.text("code")
    known = [c.value for c in ErrorCode]
    if code not in known:
        raise MalformedFrameError(f"error.code {code!r:.40} is unknown; this end knows {', '.join(known)}")
    return Error(request_id, ErrorCode(code), f.text("message"), f.flag("fatal"))


def _cancel(f: Fields, t: TensorFields, limits: Limits) -> Cancel:
    return Cancel(f.integer("request_id"))


def _bye(f: Fields, t: TensorFields, limits: Limits) -> Bye:
    return Bye()


DECODERS: dict[MessageType, _Decoder] = {
    MessageType.HELLO: _hello,
    MessageType.WELCOME: _welcome,
    MessageType.PREFILL: _prefill,
    MessageType.PREFILLED: _prefilled,
    MessageType.VERIFY: _verify,
    MessageType.VERIFIED: _verified,
    MessageType.REWIND: _rewind,
    MessageType.REWOUND: _rewound,
    MessageType.GENERATE: _generate,
    MessageType.GENERATED: _generated,
    MessageType.ERROR: _error,
    MessageType.CANCEL: _cancel,
    MessageType.BYE: _bye,
    MessageType.PROPOSE: _propose,
    MessageType.FETCH: _fetch,
    MessageType.FETCHED: _fetched,
}
