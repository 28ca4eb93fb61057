"""The client's connection against a real WebSocket server on 127.0.0.1 that welcomes, then never replies."""

from __future__ import annotations

import asyncio
import time

import pytest
from websockets.asyncio.server import ServerConnection, serve

from app.engine.config import LinkConfig
from app.engine.errors import LinkDownError
from app.engine.link import Link, Traffic
from drafts.protocol import PROTOCOL_VERSION, Capabilities, Hello, Needs, Rewind, ServerProtocol, Welcome
from tests.app.engine.scenario import CLIENT_RUNNER


async def welcome_then_ignore(ws: ServerConnection) -> None:
    """Answer the Hello, then read every request and answer none (a reply lost on the way)."""
    protocol = ServerProtocol()
    protocol.receive(await ws.recv(decode=False))
    capabilities = Capabilities(4096, 64, 2**24, "float16", batching=False)
    welcome = Welcome(PROTOCOL_VERSION, "s-1", CLIENT_RUNNER.fingerprint.to_dict(), capabilities, False, 0)
    await ws.send(protocol.send(welcome))
    async for _ in ws:
        pass


def test_a_request_without_a_reply_marks_the_link_lost_after_the_reply_timeout() -> None:
    async def scenario() -> tuple[float, bool]:
        async with serve(welcome_then_ignore, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]  # type: ignore[index]
            config = LinkConfig(f"ws://127.0.0.1:{port}", reply_timeout_s=0.3)
            hello = Hello(PROTOCOL_VERSION, "tests/0", CLIENT_RUNNER.fingerprint.to_dict(), "none", Needs())
            link = await Link.open(config, hello, Traffic())
            started = time.perf_counter()
            with pytest.raises(LinkDownError, match="no reply from the verifier within 0.3 s"):
                await link.ask(Rewind(link.new_request_id(), 0))
            waited = time.perf_counter() - started
            await link.abort()
            return waited, link.lost.is_set()

    waited, lost = asyncio.run(asyncio.wait_for(scenario(), 20))

    assert 0.3 <= waited < 2.0 and lost  # the pings kept coming: only the timeout could notice
