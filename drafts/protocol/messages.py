"""The verifier protocol's messages: domain values, each named as what it is.

A session, in order (client = the user's machine running the draft, server = the verifier)::

    client                                  server
    Hello(target, draft, needs)       ->
                                      <-    Welcome(session, capabilities)   or a fatal Error
    Prefill(id, tokens)               ->                                     append committed tokens
                                      <-    Prefilled(id, committed, activations)
    Verify(id, root, tree, q)         ->                                     one target pass over the tree
                                      <-    Verified(id, accepted path, next token, activations)
    Rewind(id, length)                ->                                     drop tokens after ``length``
                                      <-    Rewound(id, committed)
    Generate(id, root, max, stops)    ->                                     the target decodes alone
                                      <-    Generated(id, tokens, done=False) ...   one per token
                                      <-    Generated(id, tokens, done=True)        the reply
    Cancel(id)                        ->                                     stop request ``id`` (no reply of its own)
    Bye()                             ->                                     also stops every pending request

Every request (Prefill, Verify, Rewind, Generate) gets exactly one reply: its result or an Error
with its ``request_id``; a Generate's reply is its ``done`` Generated part, after the parts it
streams (plain server-side decoding, the "API streaming" baseline and the draftless mode).
Requests may be pipelined; the server handles them in order. ``committed`` is always the
server's committed length after the request. Activations are those of the tokens the request
committed, one row per token, keyed as in ``Needs``: ``"kv"`` (m, L, W),
``"hidden:<layer>"`` (m, H), ``"memory"`` (m, H) for a compressed draft input; an int8-quantised
entry ``name`` comes with ``name + ".scale"`` (see :mod:`drafts.protocol.tensors`).

**Cancel** (protocol version 3). ``Cancel(request_id)`` names a Generate or Verify (any pending
request, in fact) the client no longer wants; it has no reply of its own, and the named request
still gets exactly one reply:

- a request that has not started yet (queued on its connection, or waiting for the model) is
  answered with ``Error(request_id, CANCELLED, fatal=False)`` and changed nothing; a Generate in
  that position is answered like a running one (below), with no tokens;
- a running Generate stops within one decoding step: its reply is the usual ``done`` Generated
  part with ``cancelled=True``, carrying no new token (``tokens`` is empty); the session has
  committed exactly ``committed`` tokens, and the next root is the newest token of the parts
  already streamed (the Generate's ``root_token`` if none was);
- a Verify whose forward pass has started is answered normally (Verified): it is one step;
- a Cancel naming a request already answered, or never sent, is ignored (the race is normal).

The session stays open and usable after a Cancel: the client continues from ``committed``.
``Bye`` cancels every pending request the same way (the replies are not sent: the session is
closed), and a dropped connection stops its session's work within one step too.

**Sparse proposals** (protocol version 4). A Verify at T > 0 carries the proposal each node was
sampled from either dense (``q`` (N, V)) or as its top K entries (``q_indices`` (N, K) int32
target-vocabulary ids, ``q_weights`` (N, K) float16/float32): the node's q' is the weights
normalised over those ids and 0 elsewhere, and the draft must have sampled from exactly that q'
(the rule and why it is lossless: :mod:`drafts.sparse_proposal`). ~192 bytes a node at K = 32 in
float16 instead of ~197 KB dense. At most one of the two forms per Verify.

Messages check their own invariants (tensor dtypes and shapes, ranges) at construction and raise
:class:`~drafts.errors.MalformedFrameError`, so a bad message is refused the same way whether it
was built locally or decoded off the wire. How they are laid out in bytes lives in
:mod:`drafts.protocol.codec`; the scalar field types are the ones JSON carries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

import torch

from drafts.acceptance import Acceptance
from drafts.errors import ErrorCode, MalformedFrameError
from drafts.protocol.checks import (
    PROB_DTYPES,
    TOKEN_DTYPES,
    require_activations,
    require_non_negative,
    require_positive,
    require_tensor,
    require_tokens,
)
from drafts.sampling import SamplingConfig
from drafts.sparse_proposal import SparseProposal
from drafts.target.activations import ActivationRequest
from drafts.tree import DraftTree

PROTOCOL_VERSION = 4  # the message set below; bump on any change to a message or its meaning
# (2: Generate, 3: Cancel, 4: Verify's sparse top-K proposals q_indices / q_weights)


class MessageType(Enum):
    HELLO = "hello"
    WELCOME = "welcome"
    PREFILL = "prefill"
    PREFILLED = "prefilled"
    VERIFY = "verify"
    VERIFIED = "verified"
    REWIND = "rewind"
    REWOUND = "rewound"
    GENERATE = "generate"
    GENERATED = "generated"
    ERROR = "error"
    CANCEL = "cancel"
    BYE = "bye"


# -- parts of messages ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Needs:
    """Which target activations the client's draft reads (what the server must send back)."""

    hidden_layers: tuple[int, ...] = ()  # indices into hidden_states (0 = embeddings, L = final)
    all_layer_kv: bool = False  # every layer's K/V per token, "kv" (m, L, W)
    compressed: str | None = None  # name of a compact per-token input the server computes ("memory")

    def __post_init__(self) -> None:
        if any(layer < 0 for layer in self.hidden_layers) or len(set(self.hidden_layers)) != len(self.hidden_layers):
            raise MalformedFrameError(f"needs.hidden_layers must be distinct ints >= 0, got {self.hidden_layers}")

    @classmethod
    def of(cls, request: ActivationRequest, compressed: str | None = None) -> Needs:
        return cls(request.hidden_layers, request.all_layer_kv, compressed)

    @property
    def request(self) -> ActivationRequest:
        return ActivationRequest(self.hidden_layers, self.all_layer_kv)


@dataclass(frozen=True)
class Capabilities:
    """What a server offers a session: the client sizes its requests by these."""

    max_context: int  # tokens the session may commit
    max_tree_nodes: int  # drafted nodes one Verify may carry
    max_frame_bytes: int  # largest frame the server accepts
    payload: str  # activation encoding it sends: "float16", "bfloat16", "float32" or "int8"
    batching: bool  # whether it batches verifies of several sessions into one forward pass

    def __post_init__(self) -> None:
        require_positive("capabilities", max_context=self.max_context, max_tree_nodes=self.max_tree_nodes)
        require_positive("capabilities", max_frame_bytes=self.max_frame_bytes)


@dataclass(frozen=True)
class Timings:
    """Where a reply's time went on the server, in milliseconds."""

    queue_ms: float = 0.0  # waiting for the model (batching, other sessions)
    forward_ms: float = 0.0  # the target's forward pass

    def __post_init__(self) -> None:
        for name, value in (("queue_ms", self.queue_ms), ("forward_ms", self.forward_ms)):
            if not math.isfinite(value) or value < 0:
                raise MalformedFrameError(f"timings.{name} must be a finite number >= 0, got {value}")


# -- client -> server ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Hello:
    """Opens a session: who the client is, which target it expects and what its draft needs."""

    TYPE: ClassVar[MessageType] = MessageType.HELLO
    protocol_version: int
    client: str  # e.g. "moa-chat/0.1.0", for the server's logs
    target: Mapping[str, str | int]  # TargetFingerprint.to_dict() the draft was trained against
    draft_id: str  # which draft (architecture + checkpoint) runs on the client
    needs: Needs
    resume_session: str | None = None  # a session_id to continue after a dropped connection
    resume_length: int | None = None  # the committed length the client holds for that session

    def __post_init__(self) -> None:
        require_non_negative("hello", protocol_version=self.protocol_version)
        if not self.draft_id:
            raise MalformedFrameError("hello.draft_id is empty; name the draft the client runs")
        if self.resume_length is not None:
            if self.resume_session is None:
                raise MalformedFrameError("hello.resume_length needs resume_session; send both or neither")
            require_non_negative("hello", resume_length=self.resume_length)


@dataclass(frozen=True, eq=False)  # eq=False: tensors do not compare with ==
class Prefill:
    """Append ``tokens`` to the session; the server replies with their activations."""

    TYPE: ClassVar[MessageType] = MessageType.PREFILL
    request_id: int
    tokens: torch.Tensor  # (n,) int64 token ids

    def __post_init__(self) -> None:
        require_non_negative("prefill", request_id=self.request_id)
        require_tokens("prefill.tokens", self.tokens)


@dataclass(frozen=True, eq=False)
class Verify:
    """Verify a draft tree below ``root_token`` (see :mod:`drafts.tree` for the layout)."""

    TYPE: ClassVar[MessageType] = MessageType.VERIFY
    request_id: int
    root_token: int  # the newest token the server has not processed (last round's next_token)
    tokens: torch.Tensor  # (N,) int64 token ids of nodes 1..N
    parents: torch.Tensor  # (N,) int64 tree index of each node's parent, parents[i] <= i
    q: torch.Tensor | None  # (N, V) draft distributions the nodes were sampled from; None = deterministic
    sampling: SamplingConfig
    q_indices: torch.Tensor | None = None  # (N, K) int32: the sparse form of q (see the module docstring)
    q_weights: torch.Tensor | None = None  # (N, K) float16/float32 at those ids

    def __post_init__(self) -> None:
        require_non_negative("verify", request_id=self.request_id, root_token=self.root_token)
        require_tokens("verify.tokens", self.tokens)
        require_tensor("verify.parents", self.parents, TOKEN_DTYPES, (self.tokens.shape[0],))
        above = torch.arange(self.parents.shape[0])  # (N,) parents[i] must be in [0, i]
        if bool(((self.parents < 0) | (self.parents > above)).any()):
            raise MalformedFrameError("verify.parents[i] must be in [0, i]: list parents before their children")
        if self.q is not None:
            require_tensor("verify.q", self.q, PROB_DTYPES, (self.tokens.shape[0], None))
            if self.q.shape[1] == 0 or not bool(((self.q >= 0) & torch.isfinite(self.q)).all()):
                raise MalformedFrameError("verify.q must hold finite probabilities >= 0 over a non-empty vocabulary")
        if (self.q_indices is None) != (self.q_weights is None):
            raise MalformedFrameError("verify.q_indices and verify.q_weights go together; send both or neither")
        if self.q_sparse is not None:
            if self.q is not None:
                raise MalformedFrameError("verify carries q both dense and sparse; send one form")
            self.q_sparse.check(self.tokens)

    @classmethod
    def of(cls, request_id: int, root_token: int, tree: DraftTree, sampling: SamplingConfig) -> Verify:
        tokens = torch.tensor(tree.tokens, dtype=torch.int64)
        parents = torch.tensor(tree.parents, dtype=torch.int64)
        sparse = tree.q_sparse
        if sparse is None:
            return cls(request_id, root_token, tokens, parents, tree.q, sampling)
        return cls(request_id, root_token, tokens, parents, tree.q, sampling, sparse.indices, sparse.weights)

    @property
    def q_sparse(self) -> SparseProposal | None:
        if self.q_indices is None or self.q_weights is None:
            return None
        return SparseProposal(self.q_indices, self.q_weights)

    @property
    def tree(self) -> DraftTree:
        return DraftTree(tuple(self.tokens.tolist()), tuple(self.parents.tolist()), self.q, self.q_sparse)


@dataclass(frozen=True)
class Rewind:
    """Drop everything after the first ``length`` committed tokens (repair after offline generation)."""

    TYPE: ClassVar[MessageType] = MessageType.REWIND
    request_id: int
    length: int

    def __post_init__(self) -> None:
        require_non_negative("rewind", request_id=self.request_id, length=self.length)


@dataclass(frozen=True, eq=False)
class Generate:
    """The target decodes alone after ``root_token``, streaming each token (no draft on this client)."""

    TYPE: ClassVar[MessageType] = MessageType.GENERATE
    request_id: int
    root_token: int  # the newest token the server has not processed, as for Verify
    max_new_tokens: int  # stop after this many tokens
    stop_tokens: torch.Tensor  # (s,) int64: a token among these ends the output (and is part of it)
    sampling: SamplingConfig

    def __post_init__(self) -> None:
        require_non_negative("generate", request_id=self.request_id, root_token=self.root_token)
        require_positive("generate", max_new_tokens=self.max_new_tokens)
        require_tokens("generate.stop_tokens", self.stop_tokens)


@dataclass(frozen=True)
class Cancel:
    """Stop request ``request_id`` (a Generate or a pending Verify); no reply of its own (see the module docstring)."""

    TYPE: ClassVar[MessageType] = MessageType.CANCEL
    request_id: int  # the request to stop, not an id of its own

    def __post_init__(self) -> None:
        require_non_negative("cancel", request_id=self.request_id)


@dataclass(frozen=True)
class Bye:
    """The client ends the session; the server may forget it."""

    TYPE: ClassVar[MessageType] = MessageType.BYE


# -- server -> client ----------------------------------------------------------------------------


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
    """

    TYPE: ClassVar[MessageType] = MessageType.GENERATED
    request_id: int
    tokens: torch.Tensor  # (n,) int64 new tokens, in order (n may be 0 in a done part)
    committed: int
    done: bool  # the last part: a stop token, max_new_tokens, or the context is full
    timings: Timings = Timings()  # of this part
    cancelled: bool = False  # the Generate was stopped by Cancel (done, no tokens)

    def __post_init__(self) -> None:
        require_non_negative("generated", request_id=self.request_id, committed=self.committed)
        require_tokens("generated.tokens", self.tokens)
        if self.cancelled and (not self.done or self.tokens.numel()):
            raise MalformedFrameError("generated.cancelled is only valid on the done part, with no tokens")


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


Request = Prefill | Verify | Rewind | Generate
Reply = Prefilled | Verified | Rewound | Generated | Error
ClientMessage = Hello | Prefill | Verify | Rewind | Generate | Cancel | Bye
ServerMessage = Welcome | Prefilled | Verified | Rewound | Generated | Error
Message = ClientMessage | ServerMessage

REPLY_TYPES: dict[MessageType, MessageType] = {
    MessageType.PREFILL: MessageType.PREFILLED,
    MessageType.VERIFY: MessageType.VERIFIED,
    MessageType.REWIND: MessageType.REWOUND,
    MessageType.GENERATE: MessageType.GENERATED,
}
