"""What the server computes for each request, through the inference worker (never on the event loop).

    Prefill   append tokens            -> Prefilled (their activations)
    Verify    one pass over a tree     -> Verified (accepted path, next token, activations)
    Rewind    drop tokens              -> Rewound
    Generate  plain decoding           -> Generated parts, one per token, streamed as they come;
              the last (``done``) answers the request

Generate is the "API streaming" baseline (and the mode for a client with no draft): each step is
a Verify of the root alone, so it goes through the same batched forward as every session's
verifications and the same acceptance rule picks the token (the target's own distribution).

Every request carries its :class:`~server_stub.cancels.CancelToken`: a request cancelled before
it runs raises RequestCancelledError (the connection answers CANCELLED; nothing changed); a
Generate checks it before each step and ends with a ``cancelled`` done part (see the protocol's
Cancel). A step already handed to the model finishes: that is the one-step bound.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import torch

from drafts.protocol import Generate, Generated, Prefill, Prefilled, Rewind, Rewound, Timings, Verified, Verify
from drafts.tree import DraftTree
from server_stub.backend.base import VerifyJob
from server_stub.cancels import CancelToken
from server_stub.errors import RequestCancelledError
from server_stub.payloads import to_wire
from server_stub.sessions import SessionRecord, SessionRegistry
from server_stub.worker import InferenceWorker

Request = Prefill | Verify | Rewind | Generate
Reply = Prefilled | Verified | Rewound | Generated
SendPart = Callable[[Generated], Awaitable[None]]


async def reply_to(
    request: Request,
    record: SessionRecord,
    worker: InferenceWorker,
    send_part: SendPart,
    max_context: int,
    token: CancelToken,
) -> Reply:
    """The reply to ``request`` for the session ``record``; a Generate streams its parts through ``send_part``."""
    session_id = record.session_id
    if isinstance(request, Generate):
        return await stream_generation(request, record, worker, send_part, max_context, token)
    token.check(request.request_id)
    if isinstance(request, Prefill):
        tokens = request.tokens.tolist()
        prefilled, waited = await worker.call(lambda backend: backend.prefill(session_id, tokens), session_id, token)
        timings = Timings(waited, prefilled.timings.forward_ms)
        return Prefilled(request.request_id, prefilled.committed, to_wire(prefilled.vectors), timings)
    if isinstance(request, Verify):
        generator = SessionRegistry.generator(record, request.sampling)
        job = VerifyJob(session_id, request.root_token, request.tree, request.sampling, generator)
        verified, waited = await worker.verify(job, token)
        timings = Timings(waited, verified.timings.forward_ms)
        return Verified.of(
            request.request_id, verified.acceptance, verified.committed, to_wire(verified.vectors), timings
        )
    committed, _ = await worker.call(lambda backend: backend.rewind(session_id, request.length), session_id, token)
    return Rewound(request.request_id, committed)


async def stream_generation(
    request: Generate,
    record: SessionRecord,
    worker: InferenceWorker,
    send_part: SendPart,
    max_context: int,
    cancel: CancelToken,
) -> Generated:
    """Decode up to ``max_new_tokens`` after the root; every token but the last goes out as a part at once.

    It ends at a stop token (included), at ``max_new_tokens``, when the context has no room for
    the next root, or at a Cancel (a ``cancelled`` part, no token). The last token is returned,
    not sent: it is the request's reply.
    """
    root, stops = request.root_token, set(request.stop_tokens.tolist())
    generator = SessionRegistry.generator(record, request.sampling)
    root_alone = DraftTree.chain([])
    committed: int | None = None  # the session's length after the last step (None: no step ran yet)
    for produced in range(1, request.max_new_tokens + 1):
        job = VerifyJob(record.session_id, root, root_alone, request.sampling, generator)
        try:
            cancel.check(request.request_id)
            outcome, waited = await worker.verify(job, cancel)
        except RequestCancelledError:
            return await _cancelled(request, record, worker, committed)
        committed = outcome.committed
        token = outcome.acceptance.next_token
        done = produced == request.max_new_tokens or token in stops or outcome.committed + 1 > max_context
        timings = Timings(waited, outcome.timings.forward_ms)
        part = Generated(request.request_id, torch.tensor([token]), outcome.committed, done, timings)
        if done:
            return part
        await send_part(part)
        root = token
    raise AssertionError("unreachable: the last step is done")  # max_new_tokens >= 1 (checked by Generate)


async def _cancelled(
    request: Generate, record: SessionRecord, worker: InferenceWorker, committed: int | None
) -> Generated:
    """The done part of a cancelled Generate: no token, the session's committed length."""
    if committed is None:
        session_id = record.session_id
        length, _ = await worker.call(lambda backend: backend.committed(session_id), session_id)
        committed = length
    empty = torch.empty(0, dtype=torch.int64)
    return Generated(request.request_id, empty, committed, done=True, cancelled=True)
