"""The in-process transformers backend: any Hugging Face causal LM through :class:`TargetRunner`.

Each session owns its KV cache (a :class:`~drafts.target.session.TargetSession`). ``verify``
runs the trees of all its jobs in ONE forward pass (:mod:`server_stub.backend.batching`),
accepts with :func:`drafts.acceptance.accept_tree`, and keeps only each session's root and
accepted path in its cache, so a cache always holds exactly the committed tokens.

KV memory is accounted per session (keys + values of every layer); beyond the byte budget the
least recently used sessions are evicted (their KV dropped; their next request raises
SessionUnknownError and the client replays). The sessions of the call that went over the budget
are never evicted by it, so one session larger than the whole budget still runs.

Vectors, per the session's needs: ``hidden`` (layer -> (m, H)), ``kv`` (m, L, W) raw all-layer
keys/values, and ``memory`` (m, H) computed here by the MoA draft's server-side part
(:mod:`server_stub.backend.draft_memory`, which documents why that is the default split).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from drafts.acceptance import Acceptance, accept_tree
from drafts.protocol import Needs
from drafts.target.activations import NOTHING, ActivationRequest, Activations
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree
from server_stub.backend.base import (
    MEMORY,
    BackendCapabilities,
    PrefillOutcome,
    StepTimings,
    VerifyJob,
    VerifyOutcome,
)
from server_stub.backend.batching import BatchRow, cache_layers, commit_row, forward_batch
from server_stub.backend.draft_memory import MemoryCompressor
from server_stub.errors import (
    ContextLimitError,
    DraftUnsupportedError,
    InvalidRequestError,
    RewindOutOfRangeError,
    ServerError,
    SessionUnknownError,
    TreeLimitError,
)
from server_stub.logs import log_event

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TransformersBackendConfig:
    max_context: int | None = None  # tokens per session; None = the model's context window
    max_tree_nodes: int = 64  # drafted nodes per job; moa-server sets it by device (ServerConfig.tree_limit)
    max_batch: int = 16  # jobs per forward; more jobs in one call run as several forwards
    kv_memory_bytes: int | None = None  # KV budget over all sessions; None = unlimited

    def __post_init__(self) -> None:
        for name in ("max_context", "kv_memory_bytes"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0 or None (no limit), got {value}")
        if self.max_tree_nodes < 1 or self.max_batch < 1:
            raise ValueError("max_tree_nodes and max_batch must be >= 1")


@dataclass
class _Session:
    needs: Needs
    request: ActivationRequest  # what the runner must produce (the needs, plus KV when memory is computed here)
    target: TargetSession | None  # None: evicted
    kv_bytes: int = 0


class TransformersBackend:
    """The target in this process, one KV cache per session; see the module docstring."""

    def __init__(
        self,
        runner: TargetRunner,
        config: TransformersBackendConfig | None = None,
        compressor: MemoryCompressor | None = None,
    ) -> None:
        self.runner = runner
        self.config = config or TransformersBackendConfig()
        self.compressor = compressor
        self.max_context = min(self.config.max_context or runner.context_length, runner.context_length)
        self.vocab_size = int(runner.config.vocab_size)
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first

    # -- the interface -----------------------------------------------------------------------
    def capabilities(self) -> BackendCapabilities:
        payloads = ("hidden", "kv", MEMORY) if self.compressor else ("hidden", "kv")
        return BackendCapabilities(
            target=self.runner.fingerprint,
            max_context=self.max_context,
            max_tree_nodes=self.config.max_tree_nodes,
            trees=True,
            lossless_sampling=True,
            batching=True,
            max_batch=self.config.max_batch,
            payloads=payloads,
            memory_draft_id=self.compressor.draft_id if self.compressor else None,
            device_kind=self.runner.device.type,
        )

    def open(self, session_id: str, needs: Needs) -> None:
        self._check_needs(needs)
        request = needs.request
        if needs.compressed == MEMORY:
            request = request.union(ActivationRequest(all_layer_kv=True))
        self._sessions.pop(session_id, None)
        self._sessions[session_id] = _Session(needs, request, self.runner.new_session())

    def prefill(self, session_id: str, tokens: Sequence[int], later: bool = False) -> PrefillOutcome:
        session, target = self._live(session_id)
        tokens = list(tokens)
        self._check_tokens(tokens)
        self._check_room(target.length, len(tokens), "prefilling")
        t0 = time.perf_counter()
        deferred = later and not session.needs.hidden_layers  # all it needs is in the KV: computed when fetched
        request = NOTHING if deferred else session.request
        if tokens:
            self.runner.extend(target, tokens, request, last_only=True)
            acts = self.runner.commit(target, None, request)
        else:
            acts = Activations()
        vectors = self._vectors([session], [acts])[0] if tokens and not deferred else Activations()
        timings = StepTimings((time.perf_counter() - t0) * 1e3)
        self._account(session_id, session)
        return PrefillOutcome(target.length, vectors, timings, deferred)

    def vectors(self, session_id: str, start: int, count: int) -> Activations:
        session, target = self._live(session_id)
        try:
            kv = target.kv_rows(start, count)
        except ValueError as exc:
            raise InvalidRequestError(f"{exc}; fetch rows the session still holds") from None
        return self._vectors([session], [Activations({}, kv)])[0]

    def verify(self, jobs: Sequence[VerifyJob]) -> list[VerifyOutcome | ServerError]:
        results: list[VerifyOutcome | ServerError | None] = [None] * len(jobs)
        ready: list[int] = []  # jobs that passed their checks; each is then decided on its own row
        for i, job in enumerate(jobs):
            try:
                self._check_job(job, [jobs[j].session_id for j in ready])
                ready.append(i)
            except ServerError as exc:
                results[i] = exc
        for start in range(0, len(ready), self.config.max_batch):
            chunk = ready[start : start + self.config.max_batch]
            for i, outcome in zip(chunk, self._verify_batch([jobs[i] for i in chunk]), strict=True):
                results[i] = outcome
        return [r for r in results if r is not None]

    def rewind(self, session_id: str, length: int) -> int:
        session = self._known(session_id)
        if session.target is None:
            if length != 0:
                raise self._evicted(session_id)
            session.target = self.runner.new_session()  # the replay starts from an empty session
        elif length > session.target.length:
            raise RewindOutOfRangeError(
                f"cannot rewind to {length} tokens: the session has committed {session.target.length}; "
                "rewind to a length the server has confirmed (Welcome/Prefilled/Verified.committed)"
            )
        session.target.truncate(length)
        self._account(session_id, session)
        return length

    def evict(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.target is not None:
            log_event(log, "session.evicted", session=session_id, kv_bytes=session.kv_bytes)
            session.target, session.kv_bytes = None, 0

    def close(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def committed(self, session_id: str) -> int:
        return self._live(session_id)[1].length

    def cached_tokens(self, session_id: str) -> int:
        target = self._known(session_id).target
        if target is None:
            return 0
        layers = cache_layers(target.cache)
        return int(layers[0].keys.shape[-2]) if layers and layers[0].keys is not None else 0

    def kv_bytes(self) -> int:
        """KV memory held by all sessions."""
        return sum(s.kv_bytes for s in self._sessions.values())

    # -- batched verification ----------------------------------------------------------------
    def _verify_batch(self, jobs: Sequence[VerifyJob]) -> list[VerifyOutcome | ServerError]:
        """One forward for all jobs; every row's acceptance is decided before any row is committed,
        and a row whose acceptance fails fails alone, its session unchanged."""
        t0 = time.perf_counter()
        sessions = [self._live(job.session_id) for job in jobs]
        rows = [BatchRow(target, job.root_token, job.tree) for job, (_, target) in zip(jobs, sessions, strict=True)]
        hidden_layers = sorted({layer for s, _ in sessions for layer in s.request.hidden_layers})
        batch = forward_batch(self.runner, rows, hidden_layers)
        decided = [self._accept(job, batch.logits[b]) for b, job in enumerate(jobs)]
        ok = [b for b, d in enumerate(decided) if isinstance(d, Acceptance)]
        kept = []
        for b in ok:
            acceptance, (session, target) = decided[b], sessions[b]
            assert isinstance(acceptance, Acceptance)
            keep = [0, *acceptance.path]  # the root and the accepted path, in tree order
            commit_row(batch, b, target, keep)
            index = torch.tensor(keep, device=self.runner.device)
            hidden = {i: batch.hidden[b][i][index] for i in session.request.hidden_layers}
            kv = target.tail_kv(len(keep)) if session.request.all_layer_kv else None
            kept.append(Activations(hidden, kv))
        vectors = iter(self._vectors([sessions[b][0] for b in ok], kept))
        timings = StepTimings((time.perf_counter() - t0) * 1e3, len(jobs))
        for job, (session, _) in zip(jobs, sessions, strict=True):
            self._account(job.session_id, session, keep=[j.session_id for j in jobs])
        results: list[VerifyOutcome | ServerError] = []
        for job, d, (_, target) in zip(jobs, decided, sessions, strict=True):
            if isinstance(d, Acceptance):
                results.append(VerifyOutcome(job.session_id, d, target.length, next(vectors), timings))
            else:
                results.append(d)
        return results

    def _accept(self, job: VerifyJob, logits: torch.Tensor) -> Acceptance | ServerError:
        """The acceptance of one row, or its error (the row alone fails; nothing is committed yet)."""
        try:
            return accept_tree(job.tree, logits.cpu(), job.sampling, job.generator)
        except (RuntimeError, ValueError) as exc:  # e.g. torch.multinomial on NaN probabilities
            log_event(log, "verify.row_failed", logging.WARNING, session=job.session_id, error=str(exc)[:200])
            return InvalidRequestError(
                f"the target could not accept this draft under its sampling settings ({str(exc)[:120]}); "
                "check temperature, top_k, top_p and q; the session is unchanged"
            )

    def _vectors(self, sessions: Sequence[_Session], acts: Sequence[Activations]) -> list[Activations]:
        """What each session's needs ask for; the memory of all of them compressed in one call."""
        wants_memory = [s.needs.compressed == MEMORY for s in sessions]
        memory: list[torch.Tensor | None] = [None] * len(sessions)
        if any(wants_memory) and self.compressor is not None:
            rows = [a.kv for a, wants in zip(acts, wants_memory, strict=True) if wants and a.kv is not None]
            split = iter(self.compressor(torch.cat(rows)).split([r.shape[0] for r in rows]))
            memory = [next(split) if wants else None for wants in wants_memory]
        return [
            Activations(
                {i: a.hidden[i] for i in s.needs.hidden_layers},
                a.kv if s.needs.all_layer_kv else None,
                m,
            )
            for s, a, m in zip(sessions, acts, memory, strict=True)
        ]

    # -- sessions and memory -----------------------------------------------------------------
    def _known(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionUnknownError(
                f"session {session_id} is unknown to this server (closed, expired or never opened); "
                "open a new session and replay the conversation"
            )
        self._sessions.move_to_end(session_id)
        return session

    def _live(self, session_id: str) -> tuple[_Session, TargetSession]:
        session = self._known(session_id)
        if session.target is None:
            raise self._evicted(session_id)
        return session, session.target

    def _evicted(self, session_id: str) -> SessionUnknownError:
        return SessionUnknownError(
            f"session {session_id}'s target state was evicted to free KV memory; replay it: "
            "rewind to 0, then prefill every committed token"
        )

    def _account(self, session_id: str, session: _Session, keep: Sequence[str] = ()) -> None:
        """Update the session's KV bytes, then evict least recently used sessions beyond the budget."""
        session.kv_bytes = _kv_bytes(session.target)
        budget = self.config.kv_memory_bytes
        if budget is None:
            return
        protected = {session_id, *keep}
        total = self.kv_bytes()
        for other_id, other in list(self._sessions.items()):
            if total <= budget:
                break
            if other_id not in protected and other.kv_bytes > 0:  # an empty session frees nothing
                total -= other.kv_bytes
                self.evict(other_id)

    # -- checks --------------------------------------------------------------------------------
    def _check_needs(self, needs: Needs) -> None:
        layers = self.runner.num_layers
        if any(layer > layers for layer in needs.hidden_layers):
            raise DraftUnsupportedError(
                f"the draft asks for hidden layers {needs.hidden_layers}, but {self.runner.fingerprint.name} has "
                f"hidden states 0..{layers}; use a draft trained for this target"
            )
        if needs.compressed is not None and needs.compressed != MEMORY:
            raise DraftUnsupportedError(
                f"this server computes no {needs.compressed!r} vectors (it knows {MEMORY!r}); "
                "ask for raw activations (hidden layers or all-layer kv) instead"
            )
        if needs.compressed == MEMORY and self.compressor is None:
            raise DraftUnsupportedError(
                "the draft asks the server for MoA memory vectors, but no MoA checkpoint is loaded; start "
                "moa-server with --draft-checkpoint DIR (the client's checkpoint), or ask for the raw all-layer kv"
            )

    def _check_job(self, job: VerifyJob, batched: Sequence[str]) -> None:
        if job.session_id in batched:
            raise InvalidRequestError(f"session {job.session_id} has two verify jobs in one batch; send one at a time")
        _, target = self._live(job.session_id)
        tree = job.tree
        if tree.size > self.config.max_tree_nodes:
            raise TreeLimitError(
                f"a draft tree of {tree.size} nodes is over this server's limit of {self.config.max_tree_nodes} "
                "(moa-server --max-tree); draft smaller trees (see Welcome.capabilities.max_tree_nodes)"
            )
        self._check_tokens([job.root_token, *tree.tokens])
        self._check_q(tree)
        self._check_room(target.length, tree.size + 1, "verifying")

    def _check_tokens(self, tokens: Sequence[int]) -> None:
        bad = [t for t in tokens if not 0 <= t < self.vocab_size]
        if bad:
            raise InvalidRequestError(
                f"token id {bad[0]} is outside {self.runner.fingerprint.name}'s vocabulary of {self.vocab_size}; "
                "tokenize with the target's tokenizer"
            )

    def _check_q(self, tree: DraftTree) -> None:
        width = int(self.runner.model.get_output_embeddings().weight.shape[0])
        if tree.q is not None and tree.q.shape[-1] != width:
            raise InvalidRequestError(
                f"q covers {tree.q.shape[-1]} tokens, the target's distributions {width}; "
                "send q over the target's full vocabulary (TargetParts.to_full_vocab)"
            )
        if tree.q_sparse is not None and int(tree.q_sparse.indices.max()) >= width:
            raise InvalidRequestError(
                f"q_indices name token id {int(tree.q_sparse.indices.max())}, outside the target's {width} "
                "distributions; send target-vocabulary ids (the draft's d2t)"
            )

    def _check_room(self, length: int, more: int, doing: str) -> None:
        if length + more > self.max_context:
            raise ContextLimitError(
                f"{doing} {more} tokens after the session's {length} would exceed the context limit of "
                f"{self.max_context}; start a new conversation or shorten it"
            )


def _kv_bytes(target: TargetSession | None) -> int:
    if target is None:
        return 0
    layers = [layer for layer in cache_layers(target.cache) if layer.keys is not None]
    return sum(int(layer.keys.nbytes + layer.values.nbytes) for layer in layers)
