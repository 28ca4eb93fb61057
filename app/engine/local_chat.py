"""The local engine: draft and target in this process (cuda, mps or cpu), no network.

    engine = LocalChatEngine(LocalConfig(draft="moa"))    # or LocalChatEngine.of(runner, drafter)
    engine.subscribe(on_event)                             # LinkChanged(LOCAL) at open()
    await engine.open()                                    # loads the models on the worker thread
    async for event in engine.stream(messages, DecodeConfig(max_new_tokens=256)):
        ...                                                # TokenGenerated, DraftRejected, StatsUpdated, Finished

The same :class:`~app.engine.chat.ChatEngine` as the remote engine, and the same events: tokens
with their provenance and text, rolling stats (no round-trip time or bytes: a "round trip" is a
verify round) and Finished. Without a draft (``draft=None``) the target decodes alone, every
token TARGET. The models run on one worker thread, never on the caller's event loop; events reach
the caller's loop through ``call_soon_threadsafe``, the subscribers first in order of arrival.

Each turn renders the conversation with the target's chat template (:mod:`drafts.target.chat`)
and runs only the tokens after the longest common prefix with what the target already holds
(:mod:`app.engine.local_conversation`). ``cancel()`` stops between two rounds; the stream then
ends with ``Finished(stop=CANCELLED)`` and the partial answer, which stays in the cache for the
next turn like any other.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from app.engine.chat import EngineInfo, Message
from app.engine.errors import EngineError
from app.engine.events import EngineEvent, Finished, LinkChanged, LinkState
from app.engine.local_conversation import CachedConversation
from app.engine.local_generation import LocalGeneration
from app.engine.local_models import LocalConfig, load_models
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import Drafter
from drafts.errors import ConfigError
from drafts.target.chat import Said, format_chat_after
from drafts.target.device import resolve_device
from drafts.target.loading import DEFAULT_TARGET
from drafts.target.runner import TargetRunner

_DONE = object()  # end of a stream's queue


class LocalChatEngine:
    """A :class:`~app.engine.chat.ChatEngine` running the target (and the draft) on this device."""

    def __init__(self, config: LocalConfig | None = None) -> None:
        self.config = config or LocalConfig()
        self.runner: TargetRunner | None = None
        self.drafter: Drafter | None = None
        self.conversation = CachedConversation()  # what the target and the draft hold
        self._said: Said | None = None  # the last prompt and its answer, as text and tokens in step
        self._subscribers: list[Callable[[EngineEvent], None]] = []
        self._worker: ThreadPoolExecutor | None = None
        self._opened = False
        self._busy = asyncio.Lock()  # one generation at a time
        self._cancelled: threading.Event | None = None  # the running generation's
        self._job: asyncio.Future[Any] | None = None

    @classmethod
    def of(cls, runner: TargetRunner, drafter: Drafter | None, config: LocalConfig | None = None) -> LocalChatEngine:
        """An engine over models already loaded (``drafter`` None: the target alone)."""
        engine = cls(config or LocalConfig(draft=getattr(drafter, "name", None)))
        engine.runner, engine.drafter = runner, drafter
        return engine

    def describe(self) -> EngineInfo:
        if self.runner is None:  # not loaded yet: what will be
            target = self.config.target or DEFAULT_TARGET
            return EngineInfo("local", self.config.draft or "none", target, self._device_name(), "this device")
        name = self.drafter.name if self.drafter is not None else "none"
        return EngineInfo("local", name, self.runner.fingerprint.name, self.runner.device.type, "this device")

    def _device_name(self) -> str:
        try:
            return resolve_device(self.config.device).type
        except ConfigError:
            return self.config.device  # open() will say it is missing

    def subscribe(self, callback: Callable[[EngineEvent], None]) -> None:
        self._subscribers.append(callback)

    async def open(self) -> None:
        """Load the models (on the worker thread) unless given; LinkChanged(LOCAL) the first time."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="moa-local")
        if self.runner is None:
            resolve_device(self.config.device)  # a missing device fails here, before a long load
            loop = asyncio.get_running_loop()
            self.runner, self.drafter = await loop.run_in_executor(self._worker, load_models, self.config)
        if not self._opened:
            self._opened = True
            self._tell(LinkChanged(LinkState.LOCAL, None, "draft and target on this device"))

    async def close(self) -> None:
        """Cancel a running generation, then stop the worker thread (the models stay loaded)."""
        await self.cancel()
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        self._opened = False

    async def cancel(self) -> None:
        """Stop the running generation after its current round; returns once it has stopped."""
        if self._cancelled is not None:
            self._cancelled.set()
        if self._job is not None:
            await asyncio.wait({self._job})

    async def stream(self, messages: Sequence[Message], decode: DecodeConfig) -> AsyncIterator[EngineEvent]:
        """The next assistant message after ``messages``: its events, ending with Finished.

        Leaving the loop early cancels the generation (and waits for it to stop).
        """
        if self.runner is None or self._worker is None:
            raise EngineError("open() the local engine before streaming (it loads the models)")
        async with self._busy:
            loop = asyncio.get_running_loop()
            queue: asyncio.Queue[Any] = asyncio.Queue()
            cancelled = threading.Event()

            def emit(item: object) -> None:  # from the worker thread
                loop.call_soon_threadsafe(self._deliver, queue, item)

            self._cancelled = cancelled
            job = loop.run_in_executor(self._worker, self._generate, list(messages), decode, cancelled, emit)
            self._job = job
            try:
                while (item := await queue.get()) is not _DONE:
                    yield item
                await job  # raises what stopped the generation, if anything did
            finally:
                cancelled.set()
                await asyncio.wait({job})
                if not job.cancelled():
                    job.exception()  # retrieved: never "exception was never retrieved"
                self._cancelled = self._job = None

    async def generate(self, messages: Sequence[Message], decode: DecodeConfig) -> Finished:
        """Run one answer to the end; its Finished event."""
        finished = None
        async for event in self.stream(messages, decode):
            if isinstance(event, Finished):
                finished = event
        assert finished is not None, "every stream ends with Finished"
        return finished

    # -- on the worker thread ------------------------------------------------------------------------
    def _generate(
        self, messages: list[Message], decode: DecodeConfig, cancelled: threading.Event, emit: Callable[[Any], None]
    ) -> None:
        try:
            assert self.runner is not None
            said = format_chat_after(self.runner.tokenizer, messages, self._said)
            self._said = None  # until this answer is complete and known

            def note(item: object) -> None:
                if isinstance(item, Finished):  # the next turn extends these tokens (drafts.target.chat)
                    self._said = said.answered(item.tokens, item.text)
                emit(item)

            generation = LocalGeneration(
                self.runner, self.drafter, self.conversation, note, cancelled, self.config.stats_interval_s
            )
            generation.run(list(said.tokens), decode)
        finally:
            emit(_DONE)

    # -- on the caller's loop ------------------------------------------------------------------------
    def _deliver(self, queue: asyncio.Queue[Any], item: object) -> None:
        queue.put_nowait(item)
        if item is not _DONE:
            self._tell(item)  # type: ignore[arg-type]

    def _tell(self, event: EngineEvent) -> None:
        for callback in self._subscribers:
            callback(event)
