"""A :class:`~drafts.net.shaper.LinkShaper` on its own event loop in a background thread.

For synchronous code, tests, and programs that own other loops (the demo, the remote benchmark).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from drafts.net.link import PRESETS, LinkProfile
from drafts.net.shaper import LinkShaper, LinkStats, require_loopback

T = TypeVar("T")


class ShaperThread:
    """A :class:`LinkShaper` on its own event loop in a background thread, driven from synchronous code.

        with ShaperThread(upstream_port=8765, profile=preset("4g")) as link:
            sock = socket.create_connection(("127.0.0.1", link.port))
            link.set_profile(preset("offline"))  # sock is reset now

    Every call waits for the shaper's loop to carry it out (at most ``timeout_s``).
    """

    def __init__(
        self,
        *,
        upstream_host: str = "127.0.0.1",
        upstream_port: int,
        profile: LinkProfile = PRESETS["lan"],
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        seed: int = 0,
        timeout_s: float = 10.0,
        allow_remote: bool = False,
    ):
        require_loopback(listen_host, allow_remote)  # before any thread starts
        self._start_kwargs: dict[str, Any] = dict(
            allow_remote=allow_remote,
            upstream_host=upstream_host,
            upstream_port=upstream_port,
            profile=profile,
            listen_host=listen_host,
            listen_port=listen_port,
            seed=seed,
        )
        self.timeout_s = timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._shaper: LinkShaper | None = None

    def start(self) -> ShaperThread:
        """Start the thread and its loop, and listen; returns self."""
        if self._thread is not None:
            raise RuntimeError("this ShaperThread is already started; make a new one to start again")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="link-shaper", daemon=True)
        self._thread.start()
        try:
            self._shaper = self._call(LinkShaper.start(**self._start_kwargs))
        except BaseException:
            self._halt()
            raise
        return self

    @property
    def port(self) -> int:
        return self._running().port

    @property
    def profile(self) -> LinkProfile:
        return self._running().profile

    def set_profile(self, profile: LinkProfile) -> None:
        self._call(self._running().set_profile(profile))

    def stats(self) -> LinkStats:
        shaper = self._running()

        async def read() -> LinkStats:  # on the shaper's loop, so the counters are read between events
            return shaper.stats()

        return self._call(read())

    def stop(self) -> None:
        """Close the shaper (resetting open connections) and end the thread. Safe to call twice."""
        try:
            if self._shaper is not None:
                shaper, self._shaper = self._shaper, None
                self._call(shaper.close())
        finally:
            self._halt()

    def __enter__(self) -> ShaperThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _running(self) -> LinkShaper:
        if self._shaper is None:
            raise RuntimeError("the ShaperThread is not running: call start() first (or use it in a with block)")
        return self._shaper

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout_s)

    def _halt(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.timeout_s)
        if not self._thread.is_alive():
            self._loop.close()
        self._loop = None
