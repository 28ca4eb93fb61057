"""moa-server end to end: a real server on 127.0.0.1 (port 0), a tiny target, real websockets clients."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import torch
from websockets.exceptions import InvalidStatus

from drafts.errors import ErrorCode
from drafts.moa.model import MoADraft
from drafts.protocol import Bye, Error, Needs, Prefill, Prefilled, Verified, Welcome, encode
from drafts.tree import DraftTree
from server_stub.backend.base import MEMORY
from server_stub.backend.draft_memory import MemoryCompressor
from server_stub.config import ServerConfig
from server_stub.server import VerifierServer
from tests.server_stub.remote_client import Conversation, RemoteClient
from tests.server_stub.serving import (
    NEW_TOKENS,
    PROMPT,
    RUNNER,
    TARGET,
    closed_by_server,
    opened,
    reference,
    run,
    serving,
    tiny_backend,
)
from tests.tiny_drafts import random_draft
from tests.tiny_targets import VOCAB, random_tokens

# -- handshake ----------------------------------------------------------------------------------


def test_a_client_of_the_right_target_is_welcomed_with_the_servers_capabilities() -> None:
    async def scenario() -> Welcome:
        async with serving(max_tree=32, max_context=200) as server:
            _, welcome = await opened(server)
            return welcome

    welcome = run(scenario())

    assert not welcome.resumed and welcome.committed == 0 and welcome.session_id
    assert dict(welcome.target) == TARGET
    caps = welcome.capabilities
    assert (caps.max_tree_nodes, caps.max_context, caps.payload, caps.batching) == (32, 200, "float16", True)


def test_a_client_of_another_target_is_refused_with_what_to_change() -> None:
    async def scenario() -> tuple[Welcome | Error, bool]:
        async with serving() as server:
            client = await RemoteClient.connect(server.url)
            reply = await client.hello({**TARGET, "name": "SmolLM2-135M-Instruct", "num_layers": 30})
            return reply, await closed_by_server(client)

    reply, closed = run(scenario())

    assert isinstance(reply, Error) and reply.fatal and reply.code is ErrorCode.TARGET_MISMATCH
    assert "this server runs tiny-llama" in reply.message and "moa-server --target" in reply.message
    assert closed


def test_a_memory_draft_the_server_does_not_hold_is_refused() -> None:
    async def scenario() -> tuple[Welcome | Error, Welcome | Error]:
        async with serving() as server:
            without = await (await RemoteClient.connect(server.url)).hello(TARGET, Needs(compressed=MEMORY), "moa-x")
        draft = random_draft("moa", RUNNER, seed=1)
        assert isinstance(draft, MoADraft)
        async with serving(tiny_backend(MemoryCompressor(draft, "moa-served"))) as server:
            other = await (await RemoteClient.connect(server.url)).hello(TARGET, Needs(compressed=MEMORY), "moa-x")
        return without, other

    without, other = run(scenario())

    assert isinstance(without, Error) and without.code is ErrorCode.DRAFT_UNSUPPORTED
    assert "--draft-checkpoint" in without.message
    assert isinstance(other, Error) and other.code is ErrorCode.DRAFT_UNSUPPORTED and "moa-served" in other.message


def test_a_memory_draft_gets_one_compact_vector_per_committed_token() -> None:
    draft = random_draft("moa", RUNNER, seed=1)
    assert isinstance(draft, MoADraft)

    async def scenario() -> tuple[Prefilled, Verified]:
        async with serving(tiny_backend(MemoryCompressor(draft, "moa-served"))) as server:
            client, _ = await opened(server, needs=Needs(compressed=MEMORY), draft_id="moa-served")
            conversation = Conversation(PROMPT)
            return await conversation.start(client), await conversation.round(client)

    prefilled, verified = run(scenario())

    assert set(prefilled.activations) == {"memory"}
    assert prefilled.activations["memory"].shape == (len(PROMPT) - 1, RUNNER.config.hidden_size)
    assert prefilled.activations["memory"].dtype == torch.float16
    assert verified.activations["memory"].shape == (1 + verified.accepted.numel(), RUNNER.config.hidden_size)


def test_without_the_token_the_upgrade_is_refused_and_with_it_accepted(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("correct-horse-battery-staple-42\n")

    async def scenario() -> tuple[list[int], Welcome]:
        async with serving(token_file=token_file) as server:
            statuses = []
            for token in (None, "wrong-token-of-enough-length"):
                with pytest.raises(InvalidStatus) as refused:
                    await RemoteClient.connect(server.url, token)
                statuses.append(refused.value.response.status_code)
            _, welcome = await opened(server, token="correct-horse-battery-staple-42")
            return statuses, welcome

    statuses, welcome = run(scenario())

    assert statuses == [401, 401]
    assert isinstance(welcome, Welcome)


# -- generation ---------------------------------------------------------------------------------


def test_a_greedy_generation_verified_remotely_equals_the_targets_own() -> None:
    async def scenario() -> list[int]:
        async with serving() as server:
            client, _ = await opened(server)
            conversation = Conversation(PROMPT)
            await conversation.start(client)
            return await conversation.run(client, NEW_TOKENS)

    assert run(scenario()) == reference()


def test_two_clients_at_once_each_get_the_targets_own_output() -> None:
    prompts = [PROMPT, random_tokens(6, seed=9) * 3]

    async def one(server: VerifierServer, prompt: list[int]) -> list[int]:
        client, _ = await opened(server)
        conversation = Conversation(prompt)
        await conversation.start(client)
        return await conversation.run(client, NEW_TOKENS)

    async def scenario() -> list[list[int]]:
        async with serving() as server:
            return list(await asyncio.gather(*(one(server, p) for p in prompts)))

    assert run(scenario()) == [reference(p) for p in prompts]


# -- limits: an Error reply, and the server keeps serving ----------------------------------------


def test_over_limit_requests_get_error_replies_and_the_next_request_is_served() -> None:
    async def scenario() -> list[Any]:
        async with serving(max_frame_bytes=4096, max_tree=4, max_context=40) as server:
            client, _ = await opened(server)
            conversation = Conversation(PROMPT)
            replies: list[Any] = [await conversation.start(client)]
            replies.append(await client.prefill(list(range(VOCAB)) * 10))  # a frame over 4096 bytes
            replies.append(await client.verify(PROMPT[-1], DraftTree.chain([1, 2, 3, 4, 5])))  # 5 nodes > 4
            replies.append(await client.prefill([1] * 25))  # 19 + 25 tokens > 40
            replies.append(await client.prefill([VOCAB + 3]))  # not a token of this target
            replies.append(await client.rewind(100))  # more than was committed
            replies.append(await client.raw(b"\x00garbage"))
            replies.append(await client.raw("a text frame"))
            await conversation.round(client)  # still serving, and the session is intact
            replies.append(await conversation.round(client))
            return replies

    replies = run(scenario())

    codes = [r.code if isinstance(r, Error) else type(r).__name__ for r in replies]
    assert codes == [
        "Prefilled",
        ErrorCode.TOO_LARGE,
        ErrorCode.TREE_TOO_LARGE,
        ErrorCode.CONTEXT_OVERFLOW,
        ErrorCode.BAD_FRAME,
        ErrorCode.UNEXPECTED_MESSAGE,
        ErrorCode.BAD_FRAME,
        ErrorCode.BAD_FRAME,
        "Verified",
    ]
    assert not any(r.fatal for r in replies if isinstance(r, Error))
    assert "context limit of 40" in replies[3].message


def test_random_bytes_never_take_the_server_down() -> None:
    generator = torch.Generator().manual_seed(0)
    frames = [bytes(torch.randint(0, 256, (int(n),), generator=generator).tolist()) for n in range(0, 400, 7)]
    frames += [b"MOA\x01" + n.to_bytes(4, "big") + b"{}" for n in (0, 2, 10**6)]
    frames += [encode(Prefill(7, torch.tensor([1, 2])))[:-3]]  # truncated

    async def scenario() -> tuple[list[Any], list[int]]:
        async with serving() as server:
            client, _ = await opened(server)
            answers = [await client.raw(frame) for frame in frames]
            conversation = Conversation(PROMPT)
            await conversation.start(client)
            return answers, await conversation.run(client, 8)

    answers, out = run(scenario())

    assert all(isinstance(a, Error) and not a.fatal for a in answers)
    assert out == reference(n=8)


def test_beyond_max_sessions_a_client_is_told_the_server_is_busy() -> None:
    async def scenario() -> tuple[Welcome | Error, Welcome | Error]:
        async with serving(max_sessions=1) as server:
            first, _ = await opened(server)
            busy = await (await RemoteClient.connect(server.url)).hello(TARGET)
            await first.ws.send(first.protocol.send(Bye()))
            await closed_by_server(first)
            later = await (await RemoteClient.connect(server.url)).hello(TARGET)
            return busy, later

    busy, later = run(scenario())

    assert isinstance(busy, Error) and busy.code is ErrorCode.BUSY and "--max-sessions" in busy.message
    assert isinstance(later, Welcome)


def test_closing_the_server_closes_its_connections_and_stops_the_worker() -> None:
    async def scenario() -> tuple[bool, bool]:
        server = VerifierServer(ServerConfig(port=0), tiny_backend())
        await server.start()
        client, _ = await opened(server)
        await server.close()
        await server.close()  # idempotent
        return await closed_by_server(client), server.worker._thread.is_alive()

    closed, worker_alive = run(scenario())

    assert closed and not worker_alive


def test_with_a_certificate_the_server_speaks_tls(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    from tests.server_stub.certificates import self_signed

    certfile, keyfile, client_context = self_signed(tmp_path)

    async def scenario() -> tuple[str, Welcome]:
        async with serving(certfile=certfile, keyfile=keyfile) as server:
            client = await RemoteClient.connect(server.url, tls=client_context)
            welcome = await client.hello(TARGET)
            assert isinstance(welcome, Welcome)
            return server.url, welcome

    url, welcome = run(scenario())

    assert url.startswith("wss://") and isinstance(welcome, Welcome)
