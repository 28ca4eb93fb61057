"""The remote engine: the draft runs here, the target on a moa-server, events stream to the UI.

    async with RemoteEngine(config, ClientDraft.load(checkpoint)) as engine:
        async for event in engine.stream(prompt, DecodeConfig(max_new_tokens=128)):
            ...   # TokenGenerated, DraftRejected, LinkLost, Repaired, ..., Finished

Two threads do the work: the event loop that owns the socket (it only moves bytes and decides),
and one worker thread that runs the draft (and, offline, a local GGUF model has its own), so the
keepalive pings are answered while the models compute. For synchronous callers,
:class:`app.engine.sync.EngineThread` runs this on a loop of its own. One generation at a time;
the connection (and the server's session) lasts from ``open`` to ``close``. Given a
:class:`~app.engine.draftless.Draftless` client instead of a draft, the server decodes alone and
streams (:mod:`app.engine.api_generation`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from app.engine.api_generation import ApiGeneration
from app.engine.chain import DraftChain
from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.draftless import Draftless
from app.engine.events import EngineEvent, Finished
from app.engine.generation import Generation
from app.engine.offline import DraftContinuation, GGUFContinuation, OfflineContinuation
from app.engine.session import VerifierSession
from drafts.decoding.config import DecodeConfig

T = TypeVar("T")
_DONE = object()  # end of a stream's queue


class RemoteEngine:
    """Speculative decoding against a remote verifier; see the module docstring."""

    def __init__(self, config: EngineConfig, draft: ClientDraft | Draftless) -> None:
        self.config = config
        self.draft = draft
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="moa-draft")
        self._session: VerifierSession | None = None
        self._gguf: GGUFContinuation | None = None
        self._emit: Callable[[EngineEvent], None] = _ignore  # the running stream's, while one runs
        self._busy = asyncio.Lock()

    @classmethod
    def from_checkpoint(cls, config: EngineConfig, checkpoint: Path, target: str | None = None) -> RemoteEngine:
        """The draft at ``checkpoint`` (for ``target``, default the bundled SmolLM2) on ``config.device``."""
        return cls(config, ClientDraft.load(checkpoint, target, config.device))

    async def open(self) -> RemoteEngine:
        """Load the offline model (if any). The verifier is connected to by the first generation."""
        if self.config.offline_model is not None and self._gguf is None and isinstance(self.draft, ClientDraft):
            vocab = self.draft.drafter.model.parts.vocab_size
            self._gguf = await self.work(GGUFContinuation, self.config.offline_model, vocab)
        self._session = VerifierSession(self.config, self.draft, lambda event: self._emit(event))
        return self

    async def close(self) -> None:
        """End the session with the verifier and stop the worker threads."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._gguf is not None:
            await self.work(self._gguf.close)
            self._gguf = None
        self._worker.shutdown(wait=False, cancel_futures=True)

    async def __aenter__(self) -> RemoteEngine:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- generating ------------------------------------------------------------------------------
    async def stream(self, prompt: list[int], decode: DecodeConfig | None = None) -> AsyncIterator[EngineEvent]:
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

    async def work(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the draft's worker thread (never on the event loop that owns the socket)."""
        return await asyncio.get_running_loop().run_in_executor(self._worker, functools.partial(fn, *args))

    async def _produce(self, prompt: list[int], decode: DecodeConfig, put: Callable[[Any], None]) -> None:
        try:
            async with self._busy:
                session = self._session
                assert session is not None, "open() the engine (or use it as an async context manager) first"
                self._emit = put
                if isinstance(self.draft, Draftless):
                    await ApiGeneration(prompt, decode, self.draft, session, put).run()
                    return
                chain = DraftChain(self.draft.drafter.model, decode.sampling, decode.sampling.generator())
                offline: OfflineContinuation = self._gguf or DraftContinuation(chain, self.work)
                generation = Generation(
                    prompt, decode, self.config, self.draft, session, chain, offline, self.work, put
                )
                await generation.run()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # to the consumer, who re-raises it
            put(exc)
        finally:
            self._emit = _ignore
            put(_DONE)


def _ignore(event: EngineEvent) -> None:
    pass
