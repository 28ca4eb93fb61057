"""Cancel, Bye and a dropped connection stop a session's work within one step (protocol version 3)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import torch

from drafts.errors import ErrorCode
from drafts.protocol import (
    PROTOCOL_VERSION,
    Bye,
    Cancel,
    Error,
    Generate,
    Generated,
    Hello,
    Needs,
    Prefilled,
    Verified,
    Verify,
)
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from server_stub.backend.base import VerifyJob, VerifyOutcome
from server_stub.backend.transformers_backend import TransformersBackend
from server_stub.errors import ServerError
from server_stub.server import VerifierServer
from tests.server_stub.remote_client import RemoteClient
from tests.server_stub.serving import PROMPT, RUNNER, TARGET, opened, reference, run, serving

STEP_S = 0.02  # the slowed backend's time per forward: long enough that a generation outlives the test's actions


class SlowBackend(TransformersBackend):
    """The tiny target, each verify slowed to STEP_S (a bigger model), counting its forwards."""

    def __init__(self) -> None:
        super().__init__(RUNNER)
        self.forwards = 0

    def verify(self, jobs: Sequence[VerifyJob]) -> list[VerifyOutcome | ServerError]:
        time.sleep(STEP_S)
        self.forwards += 1
        return super().verify(jobs)


def no_stops() -> torch.Tensor:
    return torch.empty(0, dtype=torch.int64)


async def start_generating(client: RemoteClient, max_new_tokens: int) -> Generate:
    assert isinstance(await client.prefill(PROMPT[:-1]), Prefilled)
    request = Generate(client.protocol.new_request_id(), PROMPT[-1], max_new_tokens, no_stops(), SamplingConfig())
    await client.ws.send(client.protocol.send(request))
    return request


async def parts_until_done(client: RemoteClient, request_id: int, parts: list[Generated]) -> Any:
    """Collect streamed parts until request ``request_id``'s reply; the reply."""
    while True:
        for event in await client._events():
            reply = getattr(event, "reply", None)
            if getattr(event, "part", None) is not None:
                parts.append(event.part)
            elif reply is not None and reply.request_id == request_id:
                return reply


def test_a_cancelled_generate_ends_within_a_step_and_the_session_continues_from_what_it_committed() -> None:
    async def scenario() -> tuple[list[Generated], Any, Any, int]:
        backend = SlowBackend()
        async with serving(backend) as server:
            client, _ = await opened(server)
            request = await start_generating(client, 400)
            parts: list[Generated] = []
            while len(parts) < 3:
                [event] = await client._events()
                parts.append(event.part)
            await client.ws.send(client.protocol.send(Cancel(request.request_id)))
            forwards_at_cancel = backend.forwards
            reply = await parts_until_done(client, request.request_id, parts)
            after_cancel = backend.forwards - forwards_at_cancel
            root = int(parts[-1].tokens[-1])
            more = await client.verify(root, DraftTree.chain([]))
            return parts, reply, more, after_cancel

    parts, reply, more, after_cancel = run(scenario())

    assert isinstance(reply, Generated) and reply.done and reply.cancelled and reply.tokens.numel() == 0
    assert after_cancel <= 2  # the step in flight, and at most one the server started before the Cancel arrived
    tokens = [int(p.tokens[0]) for p in parts]
    want = reference(PROMPT, len(tokens) + 1)
    assert tokens == want[: len(tokens)] and len(tokens) < 20
    assert reply.committed == len(PROMPT) - 1 + len(tokens)  # the prompt but its newest token, plus one root per step
    assert isinstance(more, Verified) and more.next_token == want[len(tokens)]  # the conversation continues exactly
    assert more.committed == reply.committed + 1


def test_a_queued_verify_cancelled_gets_cancelled_and_changes_nothing() -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async with serving(SlowBackend()) as server:
            client, _ = await opened(server)
            generate = await start_generating(client, 400)
            verify = Verify.of(client.protocol.new_request_id(), 1, DraftTree.chain([2, 3]), SamplingConfig())
            await client.ws.send(client.protocol.send(verify))  # queued behind the Generate
            await client.ws.send(client.protocol.send(Cancel(verify.request_id)))
            await client.ws.send(client.protocol.send(Cancel(generate.request_id)))
            parts: list[Generated] = []
            generated = await parts_until_done(client, generate.request_id, parts)
            refused = await parts_until_done(client, verify.request_id, [])
            next_root = int(parts[-1].tokens[-1]) if parts else PROMPT[-1]
            check = await client.verify(next_root, DraftTree.chain([]))
            return generated, refused, check

    generated, refused, check = run(scenario())

    assert isinstance(refused, Error) and refused.code is ErrorCode.CANCELLED and not refused.fatal
    assert isinstance(generated, Generated) and generated.cancelled
    assert isinstance(check, Verified) and check.committed == generated.committed + 1  # the verify committed nothing


def test_a_cancel_naming_no_pending_request_is_ignored() -> None:
    async def scenario() -> Any:
        async with serving() as server:
            client, _ = await opened(server)
            await client.prefill(PROMPT[:-1])
            await client.ws.send(client.protocol.send(Cancel(999)))
            return await client.verify(PROMPT[-1], DraftTree.chain([]))

    reply = run(scenario())

    assert isinstance(reply, Verified) and reply.committed == len(PROMPT)


async def forwards_after(server: VerifierServer, backend: SlowBackend, end: Any) -> tuple[int, int]:
    """(forwards between ``end`` and the session's close, forwards in the 0.5 s after it)."""
    before = backend.forwards
    await end()
    for _ in range(200):
        if len(server.registry) == 0 and not backend._sessions:
            break
        await asyncio.sleep(0.01)
    closed_at = backend.forwards
    await asyncio.sleep(0.5)
    return closed_at - before, backend.forwards - closed_at


def test_bye_stops_a_running_generate_within_a_step() -> None:
    async def scenario() -> tuple[int, int]:
        backend = SlowBackend()
        async with serving(backend) as server:
            client, _ = await opened(server)
            await start_generating(client, 400)
            await client._events()  # the first part: it runs

            async def bye() -> None:
                await client.ws.send(client.protocol.send(Bye()))

            return await forwards_after(server, backend, bye)

    until_closed, later = run(scenario())

    assert until_closed <= 2 and later == 0


def test_a_dropped_connection_stops_a_running_generate_within_a_step() -> None:
    async def scenario() -> tuple[int, int]:
        backend = SlowBackend()
        async with serving(backend, resume_grace=0.0) as server:
            client, _ = await opened(server)
            await start_generating(client, 400)
            await client._events()
            return await forwards_after(server, backend, client.close)

    until_closed, later = run(scenario())

    assert until_closed <= 2 and later == 0


def test_cancel_is_not_offered_to_a_client_of_the_previous_protocol_version() -> None:
    async def scenario() -> Any:
        async with serving() as server:
            client = await RemoteClient.connect(server.url)  # an old client: only its Hello's version differs
            hello = Hello(PROTOCOL_VERSION - 1, "moa-chat/old", TARGET, "lookup", Needs())
            await client.ws.send(client.protocol.send(hello))
            return await client._events()

    [error] = run(scenario())

    assert isinstance(error, Error) and error.fatal and error.code is ErrorCode.UNSUPPORTED_VERSION
    assert "update moa-chat on the older side" in error.message
