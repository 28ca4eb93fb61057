"""A real moa-server for the engine tests: on 127.0.0.1, on its own event loop in a background thread.

The engine under test runs its own loop and threads, as it does in the app, so the server lives
apart from it, like the link shaper (:class:`drafts.net.ShaperThread`).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from drafts.target.runner import TargetRunner
from server_stub.backend.draft_memory import MemoryCompressor
from server_stub.backend.transformers_backend import TransformersBackend
from server_stub.cli import backend_config
from server_stub.config import ServerConfig
from server_stub.server import VerifierServer

T = TypeVar("T")


def free_port() -> int:
    """A port nothing listens on now (for a server that must come back on the same port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerThread:
    """``VerifierServer`` over ``runner`` (with MoA memory when ``compressor`` is given)."""

    def __init__(self, runner: TargetRunner, compressor: MemoryCompressor | None = None, **options: Any) -> None:
        self.config = ServerConfig(**{"port": 0, **options})
        self.backend = TransformersBackend(runner, backend_config(self.config), compressor)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="moa-server", daemon=True)
        self.server: VerifierServer | None = None

    def start(self) -> ServerThread:
        self._thread.start()

        async def start() -> VerifierServer:
            server = VerifierServer(self.config, self.backend)
            await server.start()
            return server

        self.server = self._call(start())
        return self

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    def evict_sessions(self) -> None:
        """Drop every session's KV, as memory pressure would: each session's next request gets SESSION_UNKNOWN."""
        assert self.server is not None
        worker, backend = self.server.worker, self.backend

        async def evict() -> None:
            await worker.call(lambda _: [backend.evict(s) for s in list(backend._sessions)])

        self._call(evict())

    def stop(self) -> None:
        """Close the server and end the thread. Safe to call twice."""
        if self._loop.is_closed():
            return
        if self.server is not None:
            server, self.server = self.server, None
            self._call(server.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(30)
