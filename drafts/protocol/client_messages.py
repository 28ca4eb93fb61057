"""What the client sends the verifier: Hello, requests (Prefill, Verify, Rewind, Generate, Fetch), Propose, Cancel, Bye.

The session they make up, and each message's meaning, are described in :mod:`drafts.protocol.messages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import torch

from drafts.errors import MalformedFrameError
from drafts.protocol.checks import (
    require_non_negative,
    require_positive,
    require_tokens,
    require_tree,
)
from drafts.protocol.message_type import MessageType
from drafts.sampling import SamplingConfig
from drafts.sparse_proposal import SparseProposal
from drafts.target.activations import ActivationRequest
from drafts.tree import DraftTree


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
    """Append ``tokens`` to the session; the server replies with their activations (or, ``later``, keeps them)."""

    TYPE: ClassVar[MessageType] = MessageType.PREFILL
    request_id: int
    tokens: torch.Tensor  # (n,) int64 token ids
    # vectors later (protocol 7): the reply carries no activations; the server keeps them for Fetch
    later: bool = False

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
        if (self.q_indices is None) != (self.q_weights is None):
            raise MalformedFrameError("verify.q_indices and verify.q_weights go together; send both or neither")
        require_tree("verify", self.tokens, self.parents, self.q, self.q_sparse)

    @classmethod
    def of(cls, request_id: int, root_token: int, tree: DraftTree, sampling: SamplingConfig) -> Verify:
        tokens, parents, indices, weights = _tree_tensors(tree)
        return cls(request_id, root_token, tokens, parents, tree.q, sampling, indices, weights)

    @property
    def q_sparse(self) -> SparseProposal | None:
        return _sparse(self.q_indices, self.q_weights)

    @property
    def tree(self) -> DraftTree:
        return DraftTree(tuple(self.tokens.tolist()), tuple(self.parents.tolist()), self.q, self.q_sparse)


def _tree_tensors(tree: DraftTree) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """(tokens, parents, q_indices, q_weights) of a tree, as Verify and Propose carry it."""
    tokens = torch.tensor(tree.tokens, dtype=torch.int64)
    parents = torch.tensor(tree.parents, dtype=torch.int64)
    sparse = tree.q_sparse
    return tokens, parents, None if sparse is None else sparse.indices, None if sparse is None else sparse.weights


def _sparse(indices: torch.Tensor | None, weights: torch.Tensor | None) -> SparseProposal | None:
    return None if indices is None or weights is None else SparseProposal(indices, weights)


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
    # speculative streaming: the client sends Propose messages for this request, each step verifies
    # the part of the newest one that still applies, and every part carries activations
    propose: bool = False

    def __post_init__(self) -> None:
        require_non_negative("generate", request_id=self.request_id, root_token=self.root_token)
        require_positive("generate", max_new_tokens=self.max_new_tokens)
        require_tokens("generate.stop_tokens", self.stop_tokens)


@dataclass(frozen=True, eq=False)
class Propose:
    """A draft tree for the steps of a running proposing Generate; no reply of its own.

    The tree's root is the session token at index ``base`` (the newest token of a Generated part
    the client knew of: index ``part.committed``); a node at depth d guesses index ``base + d``.
    The server keeps the part that still applies when it next steps (:mod:`drafts.proposal_match`).
    """

    TYPE: ClassVar[MessageType] = MessageType.PROPOSE
    request_id: int  # the proposing Generate these drafts are for, not an id of its own
    base: int  # session index of the tree's root
    tokens: torch.Tensor  # (N,) int64 token ids of nodes 1..N, as Verify's
    parents: torch.Tensor  # (N,) int64 tree index of each node's parent, parents[i] <= i
    q: torch.Tensor | None = None  # (N, V) dense proposals (T > 0); None = deterministic or sparse
    q_indices: torch.Tensor | None = None  # (N, K) int32 sparse form of q, as Verify's
    q_weights: torch.Tensor | None = None  # (N, K) float16/float32

    def __post_init__(self) -> None:
        require_non_negative("propose", request_id=self.request_id, base=self.base)
        if (self.q_indices is None) != (self.q_weights is None):
            raise MalformedFrameError("propose.q_indices and propose.q_weights go together; send both or neither")
        require_tree("propose", self.tokens, self.parents, self.q, self.q_sparse)

    @classmethod
    def of(cls, request_id: int, base: int, tree: DraftTree) -> Propose:
        tokens, parents, indices, weights = _tree_tensors(tree)
        return cls(request_id, base, tokens, parents, tree.q, indices, weights)

    @property
    def q_sparse(self) -> SparseProposal | None:
        return _sparse(self.q_indices, self.q_weights)

    @property
    def tree(self) -> DraftTree:
        return DraftTree(tuple(self.tokens.tolist()), tuple(self.parents.tolist()), self.q, self.q_sparse)


@dataclass(frozen=True)
class Fetch:
    """The kept activations of ``length`` tokens from session index ``start`` (of a ``Prefill(later=True)``).

    Answered beside the queue (it needs no forward of the target), not behind the requests before it.
    """

    TYPE: ClassVar[MessageType] = MessageType.FETCH
    request_id: int
    start: int  # session index of the first token whose rows are wanted
    length: int  # rows wanted

    def __post_init__(self) -> None:
        require_non_negative("fetch", request_id=self.request_id, start=self.start)
        require_positive("fetch", length=self.length)


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
