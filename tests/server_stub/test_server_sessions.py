"""moa-server sessions across connections: idle closes, resumes within the grace period, replays after it."""

from __future__ import annotations

import asyncio
from typing import Any

from drafts.errors import ErrorCode
from drafts.protocol import Error, Rewound, Welcome
from drafts.tree import DraftTree
from tests.server_stub.remote_client import Conversation, RemoteClient
from tests.server_stub.serving import (
    NEW_TOKENS,
    PROMPT,
    closed_by_server,
    opened,
    reference,
    run,
    serving,
    tiny_backend,
)
from tests.tiny_targets import random_tokens


def test_an_idle_connection_is_closed_with_a_message_and_its_session_can_be_resumed() -> None:
    async def scenario() -> tuple[Any, Welcome, int, list[int]]:
        async with serving(idle_timeout=0.3, resume_grace=10) as server:
            client, welcome = await opened(server)
            conversation = Conversation(PROMPT)
            await conversation.start(client)
            await conversation.round(client)
            idle = client.protocol.receive(await asyncio.wait_for(client.ws.recv(decode=False), 5))[0]
            again, resumed = await opened(server, resume_session=welcome.session_id)
            return idle, resumed, conversation.committed, await conversation.run(again, NEW_TOKENS)

    idle, resumed, committed, out = run(scenario())

    assert isinstance(idle, Error) and idle.fatal and idle.code is ErrorCode.BUSY and "resume_session" in idle.message
    assert resumed.resumed and resumed.committed == committed
    assert out == reference()


# -- dropped connections ------------------------------------------------------------------------


def test_a_dropped_client_resumes_its_session_within_the_grace_period() -> None:
    async def scenario() -> tuple[Welcome, list[int]]:
        async with serving(resume_grace=30) as server:
            client, welcome = await opened(server)
            conversation = Conversation(PROMPT)
            await conversation.start(client)
            await conversation.run(client, 10)
            client.ws.transport.abort()  # the link dies: no close handshake
            again, resumed = await opened(
                server, resume_session=welcome.session_id, resume_length=conversation.committed
            )
            return resumed, await conversation.run(again, NEW_TOKENS)

    resumed, out = run(scenario())

    assert resumed.resumed and resumed.committed > len(PROMPT) - 1
    assert out == reference()


def test_a_resume_that_lost_replies_is_rewound_to_what_the_client_holds() -> None:
    async def scenario() -> tuple[Welcome, list[int]]:
        async with serving() as server:
            client, welcome = await opened(server)
            conversation = Conversation(PROMPT)
            await conversation.start(client)
            held = Conversation(PROMPT, list(conversation.out))  # what the client holds before the lost round
            await conversation.run(client, 6)  # rounds whose replies the client "never saw"
            client.ws.transport.abort()
            again, resumed = await opened(server, resume_session=welcome.session_id, resume_length=held.committed)
            return resumed, await held.run(again, NEW_TOKENS)

    resumed, out = run(scenario())

    assert resumed.resumed and resumed.committed == len(PROMPT) - 1
    assert out == reference()


def test_a_resume_while_the_old_connection_looks_alive_takes_the_session_over() -> None:
    async def scenario() -> tuple[bool, Welcome, list[int]]:
        async with serving() as server:
            old, welcome = await opened(server)
            conversation = Conversation(PROMPT)
            await conversation.start(old)
            await conversation.run(old, 5)
            new, resumed = await opened(server, resume_session=welcome.session_id, resume_length=conversation.committed)
            return await closed_by_server(old), resumed, await conversation.run(new, NEW_TOKENS)

    old_closed, resumed, out = run(scenario())

    assert old_closed and resumed.resumed
    assert out == reference()


def test_after_the_grace_period_the_client_is_told_session_unknown_and_replays() -> None:
    async def scenario() -> tuple[RemoteClient, Welcome, list[int]]:
        async with serving(resume_grace=0.1) as server:
            client, welcome = await opened(server)
            conversation = Conversation(PROMPT)
            await conversation.start(client)
            await conversation.run(client, 10)
            client.ws.transport.abort()
            await asyncio.sleep(0.5)
            again, fresh = await opened(server, resume_session=welcome.session_id, resume_length=conversation.committed)
            await conversation.start(again)  # the replay
            return again, fresh, await conversation.run(again, NEW_TOKENS)

    again, fresh, out = run(scenario())

    assert not fresh.resumed and fresh.committed == 0
    assert [n.code for n in again.notices] == [ErrorCode.SESSION_UNKNOWN]
    assert out == reference()


def test_an_evicted_session_is_replayed_after_session_unknown() -> None:
    async def scenario() -> tuple[Any, Any, list[int]]:
        async with serving(tiny_backend(kv_memory_bytes=1)) as server:  # every other session gets evicted
            client, _ = await opened(server)
            other, _ = await opened(server)
            conversation = Conversation(PROMPT)
            await conversation.start(client)
            await conversation.round(client)
            await Conversation(random_tokens(5, seed=1)).start(other)  # evicts the first session
            unknown = await client.verify(conversation.context[-1], DraftTree.chain([1]))
            rewound = await client.rewind(0)
            await conversation.start(client)
            return unknown, rewound, await conversation.run(client, NEW_TOKENS)

    unknown, rewound, out = run(scenario())

    assert isinstance(unknown, Error) and unknown.code is ErrorCode.SESSION_UNKNOWN and "replay" in unknown.message
    assert isinstance(rewound, Rewound) and rewound.committed == 0
    assert out == reference()


# -- shutdown -----------------------------------------------------------------------------------
