"""The remote engine for synchronous callers: its event loop runs in a background thread.

    with EngineThread(config, draft) as engine:
        for event in engine.stream(prompt, DecodeConfig(max_new_tokens=64)):
            print(event)

The loop thread owns the socket; the caller's thread only reads events off a queue, so a slow
consumer never delays a keepalive ping.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.draftless import Draftless
from app.engine.events import EngineEvent, Finished
from app.engine.remote import RemoteEngine
from drafts.decoding.config import DecodeConfig

T = TypeVar("T")
_DONE = object()


class EngineThread:
    """A :class:`RemoteEngine` on its own event loop in a daemon thread."""

    def __init__(self, config: EngineConfig, draft: ClientDraft | Draftless, timeout_s: float = 60.0) -> None:
        self.engine = RemoteEngine(config, draft)
        self.timeout_s = timeout_s  # for open and close
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="moa-engine-loop", daemon=True)

    def start(self) -> EngineThread:
        self._thread.start()
        self._call(self.engine.open())
        return self

    def stop(self) -> None:
        """Close the engine and end the thread. Safe to call twice."""
        if not self._thread.is_alive():
            return
        try:
            self._call(self.engine.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(self.timeout_s)
            if not self._thread.is_alive():
                self._loop.close()

    def __enter__(self) -> EngineThread:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stream(self, prompt: list[int], decode: DecodeConfig | None = None) -> Iterator[EngineEvent]:
        """The events of one generation, as they happen; closing the iterator stops the generation."""
        events: queue.Queue[Any] = queue.Queue()

        async def pump() -> None:
            try:
                async for event in self.engine.stream(prompt, decode):
                    events.put(event)
            except BaseException as exc:  # handed to the caller's thread, re-raised there
                events.put(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
            finally:
                events.put(_DONE)

        future = asyncio.run_coroutine_threadsafe(pump(), self._loop)
        try:
            while (item := events.get()) is not _DONE:
                if isinstance(item, asyncio.CancelledError):
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            future.cancel()

    def cancel(self) -> None:
        """Stop the running generation (from any thread): its stream ends with Finished(stop=CANCELLED)."""
        self._call(self.engine.cancel())

    def forget(self) -> None:
        """The next generation keeps nothing from the last (see RemoteEngine.forget)."""
        self._loop.call_soon_threadsafe(self.engine.forget)

    def generate(self, prompt: list[int], decode: DecodeConfig | None = None) -> Finished:
        finished = None
        for event in self.stream(prompt, decode):
            if isinstance(event, Finished):
                finished = event
        assert finished is not None
        return finished

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout_s)
