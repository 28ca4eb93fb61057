"""Issue 13 on a real server: one client cannot hurt another, and every limit is an Error reply that names it."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import torch
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from drafts.errors import ErrorCode
from drafts.protocol import (
    Answered,
    Cancel,
    Error,
    Generate,
    Prefill,
    Prefilled,
    Rewind,
    Streamed,
    Verified,
    Verify,
    encode,
)
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from server_stub.auth import bearer
from server_stub.logs import configure_logging
from server_stub.server import VerifierServer
from tests.server_stub.remote_client import Conversation, RemoteClient
from tests.server_stub.serving import PROMPT, TARGET, closed_by_server, opened, reference, run, serving
from tests.server_stub.test_server_cancel import SlowBackend

MIB = 2**20


def unchecked_sampling(**fields: object) -> SamplingConfig:
    """Settings that skipped validation, as an attacker's own encoder sends them."""
    config = object.__new__(SamplingConfig)
    for name, value in {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": None, **fields}.items():
        object.__setattr__(config, name, value)
    return config


async def answers(client: RemoteClient, request_ids: list[int], parts: list[Any]) -> dict[int, Any]:
    """The replies to ``request_ids`` (in any order), the streamed parts meanwhile into ``parts``."""
    got: dict[int, Any] = {}
    while not set(request_ids) <= got.keys():
        for event in await client._events():
            if isinstance(event, Streamed):
                parts.append(event.part)
            elif isinstance(event, Answered):
                got[event.request.request_id] = event.reply
    return got


def log_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


# -- 1. a poisoned verify cannot fail the others' --------------------------------------------------


def test_a_poisoned_verify_is_a_bad_frame_and_an_honest_client_beside_it_is_unaffected() -> None:
    async def scenario() -> tuple[list[Any], list[int]]:
        async with serving() as server:
            attacker, _ = await opened(server)
            honest, _ = await opened(server)
            await attacker.prefill(PROMPT[:-1])
            conversation = Conversation(PROMPT)
            await conversation.start(honest)
            refusals = []
            for field, value in (("temperature", 1e-300), ("temperature", 1e-45), ("top_p", 5e-324)):
                sampling = unchecked_sampling(**{"temperature": 1.0, field: value})
                poison = Verify.of(7, PROMPT[-1], DraftTree.chain([3]), sampling)
                refusals.append(await attacker.raw(encode(poison)))  # the attacker's own encoder checks nothing
                await conversation.round(honest)
            return refusals, await conversation.run(honest, 24)

    refusals, honest_tokens = run(scenario())

    assert all(isinstance(r, Error) and r.code is ErrorCode.BAD_FRAME and not r.fatal for r in refusals)
    assert honest_tokens == reference(PROMPT, 24)


# -- 3. memory: queued request bytes are bounded per connection and in all --------------------------


async def busy_generating(server: VerifierServer) -> tuple[RemoteClient, Generate]:
    """A client whose connection is busy with a long Generate, so what it sends next waits in its queue."""
    client, _ = await opened(server)
    assert isinstance(await client.prefill(PROMPT[:-1]), Prefilled)
    generate = Generate(client.protocol.new_request_id(), PROMPT[-1], 400, torch.empty(0, dtype=torch.int64), GREEDY)
    await client.ws.send(client.protocol.send(generate))
    return client, generate


GREEDY = SamplingConfig()
BIG = 110_000  # tokens: a 0.88 MB Prefill frame


async def pipeline_prefills(client: RemoteClient, count: int) -> list[Prefill]:
    prefills = [Prefill(client.protocol.new_request_id(), torch.ones(BIG, dtype=torch.int64)) for _ in range(count)]
    for prefill in prefills:
        await client.ws.send(client.protocol.send(prefill))
    return prefills


def test_requests_beyond_a_connections_queued_bytes_are_refused_naming_the_limit_and_the_session_goes_on() -> None:
    async def scenario() -> tuple[list[Any], Any]:
        async with serving(SlowBackend(), max_frame_bytes=MIB, max_queued_mb=2) as server:
            client, generate = await busy_generating(server)
            prefills = await pipeline_prefills(client, 4)
            await client.ws.send(client.protocol.send(Cancel(generate.request_id)))
            parts: list[Any] = []
            got = await answers(client, [generate.request_id, *(p.request_id for p in prefills)], parts)
            root = int(parts[-1].tokens[-1]) if parts else PROMPT[-1]
            assert got[generate.request_id].cancelled
            return [got[p.request_id] for p in prefills], await client.verify(root, DraftTree.chain([]))

    replies, after = run(scenario())

    busy = [r for r in replies if isinstance(r, Error) and r.code is ErrorCode.BUSY]
    assert len(busy) == 2 and all("--max-queued-mb" in r.message for r in busy)  # 2 x 0.88 MB fit in 2 MiB
    assert all(isinstance(r, Error) and r.code is ErrorCode.CONTEXT_OVERFLOW for r in replies if r not in busy)
    assert isinstance(after, Verified)


def test_requests_beyond_the_servers_queued_bytes_are_refused_naming_the_limit() -> None:
    async def scenario() -> Any:
        async with serving(SlowBackend(), max_frame_bytes=MIB, max_queued_total_mb=1) as server:
            first, first_generate = await busy_generating(server)
            second, second_generate = await busy_generating(server)
            await pipeline_prefills(first, 1)
            assert server.services is not None
            while server.services.queued.used < BIG * 8:  # until the server has read it
                await asyncio.sleep(0.005)
            [prefill] = await pipeline_prefills(second, 1)
            await second.ws.send(second.protocol.send(Cancel(second_generate.request_id)))
            got = await answers(second, [prefill.request_id, second_generate.request_id], [])
            await first.ws.send(first.protocol.send(Cancel(first_generate.request_id)))
            return got[prefill.request_id]

    refused = run(scenario())

    assert isinstance(refused, Error) and refused.code is ErrorCode.BUSY and "--max-queued-total-mb" in refused.message


# -- 4. capacity: per-client sessions, a connection cap, a short Hello timeout -------------------------


def test_one_client_cannot_hold_more_than_its_share_of_sessions() -> None:
    async def scenario() -> Any:
        async with serving(max_sessions=8, max_sessions_per_client=2) as server:
            await opened(server)
            await opened(server)
            third = await RemoteClient.connect(server.url)
            return await third.hello(TARGET)

    refused = run(scenario())

    assert isinstance(refused, Error) and refused.fatal and refused.code is ErrorCode.BUSY
    assert "--max-sessions-per-client" in refused.message


def test_beyond_the_connection_cap_a_new_connection_is_told_busy_and_closed() -> None:
    async def scenario() -> tuple[Any, bool, Any]:
        async with serving(max_connections=2) as server:
            first, _ = await opened(server)
            await RemoteClient.connect(server.url)  # connected, no Hello yet: it holds a slot too
            third = await RemoteClient.connect(server.url)
            [refused] = third.protocol.receive(await third.ws.recv(decode=False))  # told at once, before any Hello
            closed = await closed_by_server(third)
            await first.close()
            await asyncio.sleep(0.1)
            _, later = await opened(server)  # a freed slot is usable again
            return refused, closed, later

    refused, closed, later = run(scenario())

    assert isinstance(refused, Error) and refused.fatal and refused.code is ErrorCode.BUSY
    assert "--max-connections" in refused.message and closed and later.session_id


def test_a_connection_that_never_says_hello_is_closed_after_the_hello_timeout() -> None:
    async def scenario() -> tuple[Any, bool]:
        async with serving(hello_timeout=0.3) as server:
            silent = await RemoteClient.connect(server.url)
            notice = await asyncio.wait_for(silent.ws.recv(decode=False), timeout=5)
            return silent.protocol.receive(notice), await closed_by_server(silent)

    [notice], closed = run(scenario())

    assert isinstance(notice, Error) and notice.fatal and "--hello-timeout" in notice.message and closed


# -- 5. smaller: a duplicate header, text frames, log floods -------------------------------------


def test_two_authorization_headers_get_a_clean_400_and_no_traceback(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("correct-horse-battery-staple-42\n")
    stream = io.StringIO()
    configure_logging(logging.INFO, stream)

    async def scenario() -> int:
        async with serving(token_file=token_file) as server:
            headers = [("Authorization", bearer("correct-horse-battery-staple-42"))] * 2
            with pytest.raises(InvalidStatus) as refused:
                await connect(server.url, additional_headers=headers)
            return refused.value.response.status_code

    assert run(scenario()) == 400
    lines = log_lines(stream)
    assert not any("exception" in line or "Traceback" in json.dumps(line) for line in lines)
    assert any(line["event"] == "auth.refused" and line.get("reason") == "duplicate header" for line in lines)


def test_a_text_frame_holding_a_valid_frame_is_refused() -> None:
    async def scenario() -> Any:
        async with serving() as server:
            client, _ = await opened(server)
            frame = encode(Rewind(client.protocol.new_request_id(), 3))
            return await client.raw(frame.decode("utf-8"))  # a short header, no tensors: valid UTF-8

    reply = run(scenario())

    assert isinstance(reply, Error) and reply.code is ErrorCode.BAD_FRAME and "text frame" in reply.message


def test_a_flood_of_bad_frames_logs_a_few_lines_and_then_how_many_it_suppressed() -> None:
    stream = io.StringIO()
    configure_logging(logging.INFO, stream)

    async def scenario() -> int:
        async with serving() as server:
            server.rejections.window_s = 3600.0  # the whole flood falls in one window, however loaded the machine
            client, _ = await opened(server)
            for _ in range(300):
                await client.raw(b"MOA\x01garbage")
            server.rejections.window_s = 0.0  # ... which then ends: the next line says how many were suppressed
            await client.raw(b"MOA\x01garbage")
            return server.rejections.burst

    burst = run(scenario())

    rejected = [line for line in log_lines(stream) if line["event"] == "frame.rejected"]
    assert len(rejected) == burst + 1
    assert rejected[-1]["suppressed"] == 300 - burst
