"""The target-backend interface: the one seam between the verifier server and the engine that runs the target.

The server (sockets, sessions, limits, batching of *requests*) talks to the engine only through
:class:`TargetBackend`. The in-process transformers backend
(:mod:`server_stub.backend.transformers_backend`) is the first implementation; a distributed
engine takes over here when one machine is no longer enough (``shared/research/scale.md`` §7):

- **vLLM V1, as an out-of-tree plugin** (the scale path): a "draft mailbox" proposer
  (``custom_class``) hands each session's client drafts to the engine, a parking scheduler keeps
  a session's request out of the batch while its next drafts are on the network, and a KV
  connector captures the verified positions' per-layer K/V and runs MoA's Layer Self-Attention
  on the GPU, so only the compact memory vector per token leaves the engine.
- **TensorRT-LLM external draft tokens** (the fallback): chain-only verification with no engine
  patch; the vectors need a model patch (``additional_model_outputs``).

Two implementation styles fit behind the one interface, and the server must not care which:
*scoring* backends get the target's logits per tree node and call
:func:`drafts.acceptance.accept_tree` (the one home of the accept/reject rule), as the
transformers backend does; *native-verify* backends let the engine accept and report the
outcome. Either way every backend must pass ``tests/server_stub/backend/test_contract.py``.

A session's life::

    open(id, needs) -> prefill(id, tokens)* -> verify([job, ...])* -> rewind(id, n)* -> close(id)

``verify`` is batched over sessions: one call, one target forward for all of them. A backend
may ``evict`` a session's KV at any time (memory pressure; a restart of the engine); the next
request on it raises :class:`~server_stub.errors.SessionUnknownError` and the client replays:
``rewind(id, 0)`` makes the session usable (empty) again, then ``prefill`` of its history.

*Vectors* are what the client's draft reads from the target for each committed token, per the
session's :class:`~drafts.protocol.Needs`: hidden states of given layers, the raw all-layer
keys/values (MoA's Layer Self-Attention input), or ``"memory"``: MoA's LSA + mean + Ekv2E run
by the server-side part of the draft, one H-dim vector per token (see the transformers backend
for why that split is the default).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import torch

from drafts.acceptance import Acceptance
from drafts.protocol import Needs, vectors
from drafts.sampling import SamplingConfig
from drafts.target.activations import Activations
from drafts.target.loading import TargetFingerprint
from drafts.tree import DraftTree
from server_stub.errors import ServerError

MEMORY = vectors.MEMORY  # Needs.compressed of a MoA draft whose LSA + Ekv2E runs on the server


@dataclass(frozen=True)
class BackendCapabilities:
    """What a backend offers; the server derives the Welcome's capabilities from it."""

    target: TargetFingerprint  # the model it runs; clients' drafts must be trained for it
    max_context: int  # tokens one session may hold
    max_tree_nodes: int  # drafted nodes one verify job may carry (the root excluded)
    trees: bool  # verifies trees (False: chains only; the client sends its best chain)
    lossless_sampling: bool  # T > 0 with the draft's q is exact (False: greedy only)
    batching: bool  # several sessions' jobs share one forward pass
    max_batch: int  # jobs per verify call it runs in one forward
    payloads: tuple[str, ...]  # vectors it can return: "hidden", "kv", "memory"
    memory_draft_id: str | None  # the draft whose server-side part computes "memory" (None: none loaded)
    device_kind: str = "cpu"  # where the target runs (torch.device.type): Welcome's capabilities.device_kind

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["target"] = self.target.to_dict()
        return data


@dataclass(frozen=True)
class StepTimings:
    """Where a backend call's time went, in milliseconds."""

    forward_ms: float  # the target's forward pass (shared by every job of a batch)
    batch_size: int = 1  # jobs that shared it


@dataclass(frozen=True)
class PrefillOutcome:
    committed: int  # the session's committed length after the prefill
    vectors: Activations  # one row per prefilled token, as the session's needs ask
    timings: StepTimings
    deferred: bool = False  # not computed (a later prefill whose needs come from the KV): ``vectors(...)`` will


@dataclass(frozen=True)
class VerifyJob:
    """One session's draft tree to verify (see :mod:`drafts.tree` for the layout)."""

    session_id: str
    root_token: int  # the newest token the target has not processed (last round's next token)
    tree: DraftTree  # nodes below the root; ``tree.q`` the draft's proposals, or None (deterministic)
    sampling: SamplingConfig
    generator: torch.Generator | None = None  # the session's, so T > 0 runs are reproducible per session


@dataclass(frozen=True)
class VerifyOutcome:
    session_id: str
    acceptance: Acceptance  # accepted tree indices and the target's next token (bonus or correction)
    committed: int  # the session's committed length: before + 1 (the root) + accepted
    vectors: Activations  # rows for [root, accepted nodes...]
    timings: StepTimings


class TargetBackend(Protocol):
    """Runs the target for many sessions. Not thread-safe: one worker thread drives it."""

    def capabilities(self) -> BackendCapabilities:
        """What this backend offers (constant for its lifetime)."""
        ...

    def open(self, session_id: str, needs: Needs) -> None:
        """Start an empty session; raises DraftUnsupportedError if ``needs`` cannot be served."""
        ...

    def prefill(self, session_id: str, tokens: Sequence[int], later: bool = False) -> PrefillOutcome:
        """Commit ``tokens`` after what the session holds and return their vectors; ``later``: the vectors
        are wanted after the reply, so those that ``vectors`` can compute from the KV are not computed now."""
        ...

    def vectors(self, session_id: str, start: int, count: int) -> Activations:
        """The vectors of committed tokens ``start`` .. ``start + count - 1``, from the KV they left (a later
        prefill's, fetched); raises InvalidRequestError for rows not committed."""
        ...

    def verify(self, jobs: Sequence[VerifyJob]) -> list[VerifyOutcome | ServerError]:
        """Verify every job in one batched forward; one result per job, in order.

        A job that cannot run (unknown session, context overflow, bad token ids) comes back as
        its error, in its place; the other jobs still run.
        """
        ...

    def rewind(self, session_id: str, length: int) -> int:
        """Forget every token from ``length`` on; returns the committed length.

        ``rewind(id, 0)`` also revives an evicted session (empty), for the replay.
        """
        ...

    def evict(self, session_id: str) -> None:
        """Drop the session's KV; it stays known, and its next request raises SessionUnknownError."""
        ...

    def close(self, session_id: str) -> None:
        """Forget the session entirely (a no-op for an unknown one)."""
        ...

    def committed(self, session_id: str) -> int:
        """The session's committed length; raises SessionUnknownError if evicted or unknown."""
        ...

    def cached_tokens(self, session_id: str) -> int:
        """Tokens of KV the backend holds for the session (== committed between calls; 0 when evicted)."""
        ...
