"""What the server tests share: a tiny target, a server on a free loopback port, a client opened on it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from websockets.exceptions import ConnectionClosed

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.protocol import Welcome
from server_stub.backend.draft_memory import MemoryCompressor
from server_stub.backend.transformers_backend import TransformersBackend, TransformersBackendConfig
from server_stub.cli import backend_config
from server_stub.config import ServerConfig
from server_stub.server import VerifierServer
from tests.server_stub.remote_client import RemoteClient
from tests.tiny_drafts import tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

T = TypeVar("T")
RUNNER = tiny_target_runner(tiny_llama())
TARGET = RUNNER.fingerprint.to_dict()
PROMPT = random_tokens(10, seed=3) * 2  # repeats, so prompt lookup drafts something
NEW_TOKENS = 30


def run(scenario: Coroutine[Any, Any, T]) -> T:
    """Run one test scenario on a fresh event loop, with a deadline (a hang is a failure)."""
    return asyncio.run(asyncio.wait_for(scenario, timeout=60))


def reference(prompt: list[int] = PROMPT, n: int = NEW_TOKENS) -> list[int]:
    return generate_autoregressive(RUNNER, prompt, DecodeConfig(max_new_tokens=n)).tokens


def tiny_backend(compressor: MemoryCompressor | None = None, **limits: Any) -> TransformersBackend:
    return TransformersBackend(RUNNER, TransformersBackendConfig(**limits), compressor)


@asynccontextmanager
async def serving(backend: TransformersBackend | None = None, **options: Any) -> AsyncIterator[VerifierServer]:
    """A server on a free loopback port; its backend built from the options as moa-server builds it, unless given."""
    config = ServerConfig(port=0, **options)
    server = VerifierServer(config, backend or TransformersBackend(RUNNER, backend_config(config)))
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def opened(server: VerifierServer, **hello: Any) -> tuple[RemoteClient, Welcome]:
    client = await RemoteClient.connect(server.url, hello.pop("token", None))
    welcome = await client.hello(hello.pop("target", TARGET), **hello)
    assert isinstance(welcome, Welcome), welcome
    return client, welcome


async def closed_by_server(client: RemoteClient) -> bool:
    try:
        await asyncio.wait_for(client.ws.recv(), timeout=5)
    except ConnectionClosed:
        return True
    return False
