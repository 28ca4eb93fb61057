"""The inference worker: the one thread that drives the backend, off the event loop.

Connections submit work from the event loop and await it; the worker takes everything queued,
runs it in arrival order, and runs each stretch of consecutive verify jobs (one per session:
a connection handles its requests one at a time) as ONE batched ``backend.verify``. While a
forward pass runs, the next requests of every session queue up, so under load the batches fill
by themselves, with no waiting window that would add latency at low load.

Arrival order matters beyond batching: a verify submitted by a connection that then dropped
must still run before the resumed connection asks the session's committed length.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from server_stub.backend.base import TargetBackend, VerifyJob, VerifyOutcome
from server_stub.logs import log_event

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class _Item(Generic[T]):
    future: asyncio.Future[tuple[T, float]]  # (result, queue_ms)
    loop: asyncio.AbstractEventLoop
    submitted: float  # perf_counter at submission


@dataclass
class _Call(_Item[Any]):
    fn: Callable[[TargetBackend], Any]


@dataclass
class _Verify(_Item[VerifyOutcome]):
    job: VerifyJob


class InferenceWorker:
    """Runs backend calls on one thread; see the module docstring."""

    def __init__(self, backend: TargetBackend) -> None:
        self.backend = backend
        self.batch_sizes: Counter[int] = Counter()  # verify batch size -> how many ran
        self._queue: queue.SimpleQueue[_Call | _Verify | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="moa-inference", daemon=True)
        self._stopped = False

    def start(self) -> None:
        self._thread.start()

    async def stop(self) -> None:
        """Finish what is queued, then end the thread."""
        self._stopped = True  # set on the event loop before the sentinel: nothing can queue behind it
        if self._thread.is_alive():
            self._queue.put(None)
            await asyncio.to_thread(self._thread.join)

    async def call(self, fn: Callable[[TargetBackend], T]) -> tuple[T, float]:
        """``fn(backend)`` on the worker thread: (its result, ms it waited in the queue)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[T, float]] = loop.create_future()
        self._submit(_Call(future, loop, time.perf_counter(), fn))
        return await future

    async def verify(self, job: VerifyJob) -> tuple[VerifyOutcome, float]:
        """Verify ``job`` batched with whatever else is ready; raises the job's error."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[VerifyOutcome, float]] = loop.create_future()
        self._submit(_Verify(future, loop, time.perf_counter(), job))
        return await future

    def _submit(self, item: _Call | _Verify) -> None:
        if self._stopped:
            raise RuntimeError("the inference worker has stopped; the server is shutting down")
        self._queue.put(item)

    # -- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        running = True
        while running:
            items = [self._queue.get()]
            while True:  # everything else already queued joins this round
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            running = None not in items
            verifies: list[_Verify] = []
            for item in items:
                if isinstance(item, _Verify):
                    verifies.append(item)
                    continue
                self._verify(verifies)
                verifies = []
                if item is not None:
                    self._call(item)
            self._verify(verifies)

    def _call(self, item: _Call) -> None:
        started = time.perf_counter()
        try:
            result = item.fn(self.backend)
        except Exception as exc:  # the connection turns it into an Error reply
            _settle(item, None, exc, started)
        else:
            _settle(item, result, None, started)

    def _verify(self, items: list[_Verify]) -> None:
        if not items:
            return
        started = time.perf_counter()
        try:
            results: list[Any] = list(self.backend.verify([item.job for item in items]))
        except Exception as exc:  # a backend bug: every job of the batch gets it
            log_event(log, "verify.failed", logging.ERROR, batch=len(items), error=repr(exc))
            results = [exc] * len(items)
        self.batch_sizes[len(items)] += 1
        elapsed_ms = round((time.perf_counter() - started) * 1e3, 2)
        log_event(log, "verify.batch", logging.DEBUG, size=len(items), ms=elapsed_ms)
        for item, result in zip(items, results, strict=True):
            if isinstance(result, BaseException):
                _settle(item, None, result, started)
            else:
                _settle(item, result, None, started)


def _settle(item: _Item[Any], result: Any, exc: BaseException | None, started: float) -> None:
    """Hand the outcome to the event loop (unless the awaiting connection is gone)."""
    queue_ms = (started - item.submitted) * 1e3

    def deliver() -> None:
        if item.future.done():  # cancelled: the connection dropped; the work is done regardless
            return
        if exc is not None:
            item.future.set_exception(exc)
        else:
            item.future.set_result((result, queue_ms))

    with contextlib.suppress(RuntimeError):  # the event loop has closed (shutdown): nobody is waiting
        item.loop.call_soon_threadsafe(deliver)
