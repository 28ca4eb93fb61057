"""What the server computes for each request, through the inference worker (never on the event loop).

    Prefill   append tokens            -> Prefilled (their activations; with ``later``, none: they
              are kept on the session's record for Fetch, or computed when fetched, :mod:`server_stub.kept`)
    Fetch     kept rows                -> Fetched (at once, or a backend call between a running
              Generate's steps: :func:`fetched`; the connection answers it beside the queue)
    Verify    one pass over a tree     -> Verified (accepted path, next token, activations)
    Rewind    drop tokens              -> Rewound
    Generate  server-side decoding     -> Generated parts, one per step, streamed as they come;
              the last (``done``) answers the request (:mod:`server_stub.generation`; with
              ``propose``, each step also verifies the client's streamed proposal)

Every request carries its :class:`~server_stub.cancels.CancelToken`: a request cancelled before
it runs raises RequestCancelledError (the connection answers CANCELLED; nothing changed); a
Generate checks it before each step and ends with a ``cancelled`` done part (see the protocol's
Cancel). A step already handed to the model finishes: that is the one-step bound.
"""

from __future__ import annotations

from drafts.protocol import (
    Capabilities,
    Error,
    Fetch,
    Fetched,
    Generate,
    Generated,
    Prefill,
    Prefilled,
    Rewind,
    Rewound,
    Timings,
    Verified,
    Verify,
)
from server_stub.backend.base import VerifyJob
from server_stub.cancels import CancelToken
from server_stub.errors import InvalidRequestError
from server_stub.generation import SendPart, stream_generation
from server_stub.kept import KeptRows, after_rewind, check, require_later
from server_stub.payloads import to_wire
from server_stub.proposals import ProposalBox
from server_stub.sessions import SessionRecord, SessionRegistry
from server_stub.worker import InferenceWorker

Request = Prefill | Verify | Rewind | Generate
Reply = Prefilled | Verified | Rewound | Generated | Error


async def reply_to(
    request: Request,
    record: SessionRecord,
    worker: InferenceWorker,
    send_part: SendPart,
    caps: Capabilities,
    token: CancelToken,
    box: ProposalBox | None = None,
) -> Reply:
    """The reply to ``request`` for the session ``record``; a Generate streams its parts through ``send_part``
    (and reads its proposals from ``box``, for a proposing one)."""
    session_id = record.session_id
    if isinstance(request, Generate):
        if request.propose and not caps.propose:
            raise InvalidRequestError(
                "this server does not take proposals (started with --no-propose: Welcome.capabilities.propose is "
                "false); send Generate with propose=False, or speculate in rounds with Verify"
            )
        return await stream_generation(request, record, worker, send_part, caps, token, box)
    token.check(request.request_id)
    if isinstance(request, Prefill):
        return await _prefill(request, record, worker, caps, token)
    if isinstance(request, Verify):
        generator = SessionRegistry.generator(record, request.sampling)
        job = VerifyJob(session_id, request.root_token, request.tree, request.sampling, generator)
        verified, waited = await worker.verify(job, token)
        timings = Timings(waited, verified.timings.forward_ms)
        return Verified.of(
            request.request_id, verified.acceptance, verified.committed, to_wire(verified.vectors), timings
        )
    committed, _ = await worker.call(lambda backend: backend.rewind(session_id, request.length), session_id, token)
    record.kept = after_rewind(record.kept, committed)
    return Rewound(request.request_id, committed)


async def _prefill(
    request: Prefill, record: SessionRecord, worker: InferenceWorker, caps: Capabilities, token: CancelToken
) -> Prefilled:
    """The tokens appended; their activations in the reply, or kept on ``record`` for Fetch (``later``)."""
    if request.later:
        require_later(caps, "send Prefill with later=false, in chunks")
    session_id, tokens = record.session_id, request.tokens.tolist()
    later = request.later
    prefilled, waited = await worker.call(lambda b: b.prefill(session_id, tokens, later), session_id, token)
    timings = Timings(waited, prefilled.timings.forward_ms)
    vectors = to_wire(prefilled.vectors)
    if not later:
        return Prefilled(request.request_id, prefilled.committed, vectors, timings)
    kept = None if prefilled.deferred else vectors  # None: the backend computes them from the KV when fetched
    record.kept = KeptRows(prefilled.committed - len(tokens), len(tokens), kept)
    return Prefilled(request.request_id, prefilled.committed, {}, timings)


async def fetched(request: Fetch, record: SessionRecord, worker: InferenceWorker) -> Fetched:
    """The reply to a Fetch: the kept rows, or those computed from the KV on the worker (ordered among the
    session's work, so between a running Generate's steps); the last piece frees what was kept."""
    kept = check(record.kept, request)
    activations = kept.slice(request)
    if activations is None:
        session_id, start, count = record.session_id, request.start, request.length
        vectors, _ = await worker.call(lambda backend: backend.vectors(session_id, start, count), session_id)
        activations = to_wire(vectors)
    if record.kept is kept and request.start + request.length == kept.end:
        record.kept = None
    return Fetched(request.request_id, request.start, activations)
