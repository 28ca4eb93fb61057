"""What the verifier sends back: Welcome, a reply per request (Prefilled, Verified, Rewound, Generated, Fetched), Error.

The session they make up, and each message's meaning, are described in :mod:`drafts.protocol.messages`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from drafts.acceptance import Acceptance
from drafts.errors import ErrorCode, MalformedFrameError
from drafts.protocol.checks import (
    TOKEN_DTYPES,
    require_activations,
    require_non_negative,
    require_positive,
    require_tensor,
    require_tokens,
)
from drafts.protocol.message_type import MessageType


@dataclass(frozen=True)
class Capabilities:
    """What a server offers a session: the client sizes its requests by these."""

    max_context: int  # tokens the session may commit
    max_tree_nodes: int  # drafted nodes one Verify may carry
    max_frame_bytes: int  # largest frame the server accepts
    payload: str  # activation encoding it sends: "float16", "bfloat16", "float32" or "int8"
    batching: bool  # whether it batches verifies of several sessions into one forward pass
    # where the target runs ("cpu", "cuda", "mps"): the client picks its default draft shape by it
    # (drafts.target.default_shape.verifier_shape); None: not said (a frame without it reads as None)
    device_kind: str | None = None
    # speculative streaming: the server takes Propose messages for a Generate with propose=True
    # (protocol 6); a client that sees False falls back to round-based Verify
    propose: bool = False
    # vectors later: the server takes Prefill(later=True) and Fetch (protocol 7); a client that sees
    # False prefills in chunks, each reply with its vectors
    later: bool = False

    def __post_init__(self) -> None:
        require_positive("capabilities", max_context=self.max_context, max_tree_nodes=self.max_tree_nodes)
        require_positive("capabilities", max_frame_bytes=self.max_frame_bytes)
        if self.device_kind is not None and not self.device_kind:
            raise MalformedFrameError('capabilities.device_kind must be a device type such as "cpu" or null')


@dataclass(frozen=True)
class Timings:
    """Where a reply's time went on the server, in milliseconds."""

    queue_ms: float = 0.0  # waiting for the model (batching, other sessions)
    forward_ms: float = 0.0  # the target's forward pass

    def __post_init__(self) -> None:
        for name, value in (("queue_ms", self.queue_ms), ("forward_ms", self.forward_ms)):
            if not math.isfinite(value) or value < 0:
                raise MalformedFrameError(f"timings.{name} must be a finite number >= 0, got {value}")


@dataclass(frozen=True)
class Welcome:
    """The server accepts a Hello: the session is open."""

    TYPE: ClassVar[MessageType] = MessageType.WELCOME
    protocol_version: int
    session_id: str  # send as Hello.resume_session to continue after a dropped connection
    target: Mapping[str, str | int]  # the server's TargetFingerprint.to_dict()
    capabilities: Capabilities
    resumed: bool  # True: the session named in Hello continues
    committed: int  # tokens the server holds for this session (0 for a new one)

    def __post_init__(self) -> None:
        require_non_negative("welcome", protocol_version=self.protocol_version, committed=self.committed)
        if not self.session_id:
            raise MalformedFrameError("welcome.session_id is empty; every session needs an id")


@dataclass(frozen=True, eq=False)
class Prefilled:
    """The reply to Prefill: activations of the prefilled tokens."""

    TYPE: ClassVar[MessageType] = MessageType.PREFILLED
    request_id: int
    committed: int
    activations: Mapping[str, torch.Tensor] = field(default_factory=dict)  # name -> (n, ...)
    timings: Timings = Timings()

    def __post_init__(self) -> None:
        require_non_negative("prefilled", request_id=self.request_id, committed=self.committed)
        require_activations("prefilled", self.activations, rows=None)


@dataclass(frozen=True, eq=False)
class Fetched:
    """The reply to Fetch: the kept activations of the tokens from session index ``start``, one row each."""

    TYPE: ClassVar[MessageType] = MessageType.FETCHED
    request_id: int
    start: int
    activations: Mapping[str, torch.Tensor] = field(default_factory=dict)  # name -> (length, ...)

    def __post_init__(self) -> None:
        require_non_negative("fetched", request_id=self.request_id, start=self.start)
        require_activations("fetched", self.activations, rows=None)


@dataclass(frozen=True, eq=False)
class Verified:
    """The reply to Verify: the accepted path, the target's next token, activations of the new tokens."""

    TYPE: ClassVar[MessageType] = MessageType.VERIFIED
    request_id: int
    accepted: torch.Tensor  # (a,) int64 tree indices of the accepted path, root's child first
    next_token: int  # the target's token after the path (bonus or correction): the next root
    committed: int
    activations: Mapping[str, torch.Tensor] = field(default_factory=dict)  # name -> (1 + a, ...) root + path
    timings: Timings = Timings()

    def __post_init__(self) -> None:
        require_non_negative("verified", request_id=self.request_id, next_token=self.next_token)
        require_non_negative("verified", committed=self.committed)
        require_tensor("verified.accepted", self.accepted, TOKEN_DTYPES, (None,))
        if self.accepted.numel() and not bool((self.accepted[0] >= 1) & (self.accepted.diff() > 0).all()):
            raise MalformedFrameError("verified.accepted must be increasing tree indices >= 1 (a root-to-leaf path)")
        require_activations("verified", self.activations, rows=1 + self.accepted.shape[0])

    @classmethod
    def of(
        cls,
        request_id: int,
        acceptance: Acceptance,
        committed: int,
        activations: Mapping[str, torch.Tensor] | None = None,
        timings: Timings | None = None,
    ) -> Verified:
        accepted = torch.tensor(acceptance.path, dtype=torch.int64)
        return cls(request_id, accepted, acceptance.next_token, committed, activations or {}, timings or Timings())

    @property
    def acceptance(self) -> Acceptance:
        return Acceptance(tuple(self.accepted.tolist()), self.next_token)


@dataclass(frozen=True)
class Rewound:
    """The reply to Rewind."""

    TYPE: ClassVar[MessageType] = MessageType.REWOUND
    request_id: int
    committed: int

    def __post_init__(self) -> None:
        require_non_negative("rewound", request_id=self.request_id, committed=self.committed)


@dataclass(frozen=True, eq=False)
class Generated:
    """A part of the reply to Generate: the next token(s); the part with ``done`` answers the request.

    ``committed`` counts the tokens the server holds: all but the newest generated token, which is
    the next root (as ``Verified.next_token``). A ``cancelled`` part (always ``done``, with no
    tokens) answers a Generate stopped by Cancel: the newest streamed token is the next root.

    In a proposing Generate (``Generate.propose``) each part is one target step: its first
    ``drafted`` tokens are the client's proposal, accepted, the rest (one, unless a stop token or
    ``max_new_tokens`` cut the part inside the accepted draft) the target's own; ``activations``
    hold one row per token the step committed: the step's root, then every token of the part but
    the newest (so ``tokens.numel()`` rows), as ``Verified.activations``. A plain Generate sends
    ``drafted = 0`` and no activations.
    """

    TYPE: ClassVar[MessageType] = MessageType.GENERATED
    request_id: int
    tokens: torch.Tensor  # (n,) int64 new tokens, in order (n may be 0 in a done part)
    committed: int
    done: bool  # the last part: a stop token, max_new_tokens, or the context is full
    timings: Timings = Timings()  # of this part
    cancelled: bool = False  # the Generate was stopped by Cancel (done, no tokens)
    drafted: int = 0  # the first ``drafted`` tokens are the client's accepted proposal (proposing Generate)
    activations: Mapping[str, torch.Tensor] = field(default_factory=dict)  # name -> (n, ...): root + tokens[:-1]

    def __post_init__(self) -> None:
        require_non_negative("generated", request_id=self.request_id, committed=self.committed)
        require_non_negative("generated", drafted=self.drafted)
        require_tokens("generated.tokens", self.tokens)
        if self.cancelled and (not self.done or self.tokens.numel()):
            raise MalformedFrameError("generated.cancelled is only valid on the done part, with no tokens")
        if self.drafted > self.tokens.numel():
            raise MalformedFrameError(
                f"generated.drafted is {self.drafted}, more than the part's {self.tokens.numel()} tokens"
            )
        require_activations("generated", self.activations, rows=self.tokens.numel())


@dataclass(frozen=True)
class Error:
    """A refusal: of one request (``request_id``) or of the session (``fatal``: the sender closes)."""

    TYPE: ClassVar[MessageType] = MessageType.ERROR
    request_id: int | None
    code: ErrorCode
    message: str  # says what to change
    fatal: bool

    def __post_init__(self) -> None:
        if self.request_id is not None:
            require_non_negative("error", request_id=self.request_id)
