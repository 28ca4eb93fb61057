"""The remote engine: the draft runs here, the target on a moa-server, events stream to the UI.

    async with RemoteEngine(config, ClientDraft.load(checkpoint)) as engine:
        async for event in engine.stream(prompt, DecodeConfig(max_new_tokens=128)):
            ...   # TokenGenerated, DraftRejected, LinkLost, Repaired, StatsUpdated, ..., Finished
        await engine.cancel()   # from another task: the stream ends with Finished(stop=CANCELLED)

Three threads do the work: the event loop that owns the socket (it only moves bytes and decides),
one worker thread that runs the draft (and, offline, a local GGUF model has its own), and one that
turns tokens into text (:class:`~app.engine.transcript.Scribe`), so the keepalive pings are
answered while the models compute and the text is decoded. For synchronous callers,
:class:`app.engine.sync.EngineThread` runs this on a loop of its own. One generation at a time;
the connection (and the server's session) lasts from ``open`` to ``close``, and each generation
keeps what the last one left in the verifier and the draft (the longest common prefix of the
prompts: a chat's next turn sends only its new tokens). Given a
:class:`~app.engine.draftless.Draftless` client instead of a draft, the server decodes alone and
streams (:mod:`app.engine.api_generation`); with ``EngineConfig.stream`` the server streams and the
draft's proposals ride along (:mod:`app.engine.stream_generation`). A chat UI drives
:class:`app.engine.remote_chat.RemoteChatEngine`, built on this.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from app.engine.api_generation import ApiGeneration
from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.draftless import Draftless
from app.engine.errors import LinkDownError
from app.engine.events import EngineEvent, Finished
from app.engine.generation import Generation
from app.engine.offline import GGUFContinuation
from app.engine.session import VerifierSession
from app.engine.stream_generation import StreamGeneration
from drafts.decoding.config import DecodeConfig
from drafts.decoding.stopping import StopReason

T = TypeVar("T")
_DONE = object()  # end of a stream's queue


class RemoteEngine:
    """Speculative decoding against a remote verifier; see the module docstring."""

    def __init__(self, config: EngineConfig, draft: ClientDraft | Draftless) -> None:
        self.config = config
        self.draft = draft
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="moa-draft")
        self._text = ThreadPoolExecutor(1, thread_name_prefix="moa-text")  # detokenizing, off the loop
        self._session: VerifierSession | None = None
        self._gguf: GGUFContinuation | None = None
        self._put: Callable[[Any], None] = _ignore  # the running stream's queue, while one runs
        self._listeners: list[Callable[[EngineEvent], None]] = []
        self._busy = asyncio.Lock()
        self._running: Generation | ApiGeneration | StreamGeneration | None = None
        self._producer: asyncio.Task[None] | None = None
        self._cancelling = False
        self._forget = False  # the next generation starts cold (a benchmark's independent prompts)

    @classmethod
    def from_checkpoint(cls, config: EngineConfig, checkpoint: Path, target: str | None = None) -> RemoteEngine:
        """The draft at ``checkpoint`` (for ``target``, default the bundled SmolLM2) on ``config.device``."""
        return cls(config, ClientDraft.load(checkpoint, target, config.device))

    @property
    def session(self) -> VerifierSession:
        assert self._session is not None, "open() the engine (or use it as an async context manager) first"
        return self._session

    def listen(self, callback: Callable[[EngineEvent], None]) -> None:
        """``callback`` gets every event, during a generation or not (Reconnecting while idle)."""
        self._listeners.append(callback)

    def publish(self, event: EngineEvent) -> None:
        """Hand ``event`` to the running stream (if any) and to every listener."""
        self._put(event)
        for listener in list(self._listeners):
            listener(event)

    async def open(self) -> RemoteEngine:
        """Load the offline model (if any). The verifier is connected to by the first generation.

        Opening an open engine does nothing (no second session, no leaked connection)."""
        if self._session is not None:
            return self
        if self.config.offline_model is not None and self._gguf is None and isinstance(self.draft, ClientDraft):
            vocab = self.draft.drafter.model.parts.vocab_size
            self._gguf = await self.work(GGUFContinuation, self.config.offline_model, vocab)
        self._session = VerifierSession(self.config, self.draft, self.publish)
        return self

    async def close(self) -> None:
        """Cancel a running generation, end the session with the verifier, stop the worker threads."""
        await self.cancel()
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._gguf is not None:
            await self.work(self._gguf.close)
            self._gguf = None
        self._worker.shutdown(wait=False, cancel_futures=True)
        self._text.shutdown(wait=False, cancel_futures=True)

    def forget(self) -> None:
        """The next generation keeps nothing from the last (the verifier is rewound to 0, the draft
        reset): for measuring independent prompts, as a benchmark does."""
        self._forget = True

    async def cancel(self) -> None:
        """Stop the running generation: the server is asked to stop its requests (Cancel), and the
        stream ends at once with Finished(stop=CANCELLED), the output so far kept."""
        producer = self._producer
        if producer is None or producer.done():
            return
        self._cancelling = True
        session = self._session
        if session is not None and session.link is not None:
            with contextlib.suppress(LinkDownError, OSError, RuntimeError):
                await session.link.cancel()
        producer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(producer)

    async def __aenter__(self) -> RemoteEngine:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- generating ------------------------------------------------------------------------------
    async def stream(self, prompt: list[int], decode: DecodeConfig | None = None) -> AsyncGenerator[EngineEvent, None]:
        """The events of one generation as they happen, ending with Finished.

        Breaking out of the loop stops the generation. Raises what the engine cannot recover
        from (:class:`~app.engine.errors.EngineError`: no verifier at the start, a refusal).
        """
        queue: asyncio.Queue[Any] = asyncio.Queue()
        task = asyncio.create_task(self._produce(prompt, decode or DecodeConfig(), queue.put_nowait))
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def generate(self, prompt: list[int], decode: DecodeConfig | None = None) -> Finished:
        """Run one generation to the end; its Finished event."""
        finished = None
        async for event in self.stream(prompt, decode):
            if isinstance(event, Finished):
                finished = event
        assert finished is not None
        return finished

    def work(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on the draft's worker thread (never on the event loop that owns the socket); await
        the future for its result. Submitted at once, so jobs run in the order they were asked for, awaited
        or not (:mod:`app.engine.intake` queues the prompt's vectors without waiting)."""
        return asyncio.get_running_loop().run_in_executor(self._worker, functools.partial(fn, *args))

    async def _produce(self, prompt: list[int], decode: DecodeConfig, put: Callable[[Any], None]) -> None:
        async with self._busy:
            self._producer = asyncio.current_task()
            self._put, self._cancelling = put, False
            try:
                self._running = await self._generation(prompt, decode)
                ticker = asyncio.create_task(self._tick(self._running))
                try:
                    await self._running.run()
                finally:
                    ticker.cancel()
            except asyncio.CancelledError:
                if not self._cancelling or self._running is None:
                    raise
                self._running.finish(StopReason.CANCELLED)  # a cancel() ends the stream cleanly
            except BaseException as exc:  # to the consumer, who re-raises it
                put(exc)
            finally:
                self._put, self._running, self._producer = _ignore, None, None
                put(_DONE)

    async def _generation(
        self, prompt: list[int], decode: DecodeConfig
    ) -> Generation | ApiGeneration | StreamGeneration:
        session, forget = self.session, self._forget
        self._forget = False
        if forget:
            session.forget()
        if isinstance(self.draft, Draftless):
            return ApiGeneration(prompt, decode, self.draft, session, self._text, self.publish)
        drafter = self.draft.drafter  # its caches hold what the last generation left: the next turn cuts them back
        if forget:
            await self.work(drafter.begin, [])
        generation = Generation(
            prompt, decode, self.config, self.draft, session, self._gguf, self.work, self._text, self.publish
        )
        return StreamGeneration(generation) if self.config.stream else generation

    async def _tick(self, generation: Generation | ApiGeneration | StreamGeneration) -> None:
        """StatsUpdated every ``stats_interval_s`` while the generation runs."""
        while True:
            await asyncio.sleep(self.config.stats_interval_s)
            self.publish(generation.stats())


def _ignore(event: EngineEvent) -> None:
    pass
