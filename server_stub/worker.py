"""The inference worker: the one thread that drives the backend, off the event loop.

Connections submit work from the event loop and await it. The worker schedules fairly between
sessions, so one session's long prefill cannot hold up everyone's short verifies:

    each round   1. every session's OLDEST queued item is eligible (a session's work runs in order)
                 2. the eligible verifies run as ONE batched ``backend.verify``
                 3. then the oldest eligible call (a prefill, a rewind, ...) runs, and the next
                    ones while the calls have taken less time than the batch did (at least
                    ``MIN_CALL_SLICE_S``), so cheap calls (open, rewind) go together
    repeat, taking in whatever arrived meanwhile

So verifies and calls share the model's time about half and half while both wait: a verify
waits for at most about one batch's worth of calls, however many prefills are queued (32 new
connections prefilling at once used to hold every verify behind all 32 prefills), and a call
waits its turn among the calls. While a forward pass runs, the next requests of every session
queue up, so under load the batches fill by themselves, with no waiting window that would add
latency at low load. Work that names no session (``session=None``) is a barrier: it runs after
everything queued before it and before everything queued after it, as in a plain FIFO.

Order within a session matters beyond correctness of its own requests: a verify submitted by a
connection that then dropped must still run before the resumed connection asks the session's
committed length (unless it was cancelled, see :mod:`server_stub.cancels`: a cancelled queued
job is answered with CANCELLED without running).
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
from server_stub.cancels import CancelToken
from server_stub.errors import RequestCancelledError
from server_stub.logs import log_event

log = logging.getLogger(__name__)
T = TypeVar("T")
MIN_CALL_SLICE_S = 0.02  # calls may always take this long per round, even after a tiny batch


@dataclass
class _Item(Generic[T]):
    future: asyncio.Future[tuple[T, float]]  # (result, queue_ms)
    loop: asyncio.AbstractEventLoop
    submitted: float  # perf_counter at submission
    session: str | None  # whose work (runs in order per session); None: a barrier
    token: CancelToken | None  # skip the work if this is cancelled before it runs

    def skipped(self) -> bool:
        """Settle a cancelled item without running it; whether it was."""
        if self.token is None or not self.token.cancelled:
            return False
        _settle(
            self, None, RequestCancelledError(f"cancelled ({self.token.reason}) before it ran"), time.perf_counter()
        )
        return True


@dataclass
class _Call(_Item[Any]):
    fn: Callable[[TargetBackend], Any]


@dataclass
class _Verify(_Item[VerifyOutcome]):
    job: VerifyJob


class InferenceWorker:
    """Runs backend calls on one thread; see the module docstring."""

    def __init__(self, backend: TargetBackend, max_batch_jobs: int = 256) -> None:
        self.backend = backend
        self.max_batch_jobs = max_batch_jobs  # verifies handed to one backend.verify (it splits by its max_batch)
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

    async def call(
        self, fn: Callable[[TargetBackend], T], session: str | None = None, token: CancelToken | None = None
    ) -> tuple[T, float]:
        """``fn(backend)`` on the worker thread: (its result, ms it waited in the queue).

        ``session`` orders it among that session's work (None: after everything queued so far);
        a cancelled ``token`` skips it with RequestCancelledError.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[T, float]] = loop.create_future()
        self._submit(_Call(future, loop, time.perf_counter(), session, token, fn))
        return await future

    async def verify(self, job: VerifyJob, token: CancelToken | None = None) -> tuple[VerifyOutcome, float]:
        """Verify ``job`` batched with whatever else is ready; raises the job's error."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[VerifyOutcome, float]] = loop.create_future()
        self._submit(_Verify(future, loop, time.perf_counter(), job.session_id, token, job))
        return await future

    def _submit(self, item: _Call | _Verify) -> None:
        if self._stopped:
            raise RuntimeError("the inference worker has stopped; the server is shutting down")
        self._queue.put(item)

    # -- the thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        pending: list[_Call | _Verify | None] = []
        while True:
            if not pending:
                pending.append(self._queue.get())
            while True:  # everything else already queued joins this round
                try:
                    pending.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if not self._round(pending):
                return

    def _round(self, pending: list[_Call | _Verify | None]) -> bool:
        """Run one fair round (see the module docstring), removing what ran; False at the stop sentinel."""
        head = pending[0]
        if head is None:
            return False
        if head.session is None:  # a barrier: alone, in its place
            pending.pop(0)
            self._call_or_skip(head)
            return True
        eligible: dict[str, _Call | _Verify] = {}
        for item in pending:
            if item is None or item.session is None:
                break  # nothing passes a barrier
            eligible.setdefault(item.session, item)
        verifies = [item for item in eligible.values() if isinstance(item, _Verify)]
        calls = [item for item in eligible.values() if isinstance(item, _Call)]
        done = {id(item) for item in verifies[: self.max_batch_jobs]}
        started = time.perf_counter()
        self._verify([item for item in verifies[: self.max_batch_jobs] if not item.skipped()])
        share = max(time.perf_counter() - started, MIN_CALL_SLICE_S)  # calls get as much time as the batch took
        started = time.perf_counter()
        for item in calls:  # oldest first; at least one
            done.add(id(item))
            self._call_or_skip(item)
            if time.perf_counter() - started >= share:
                break
        pending[:] = [item for item in pending if id(item) not in done]
        return True

    def _call_or_skip(self, item: _Call | _Verify) -> None:
        if item.skipped():
            return
        if isinstance(item, _Verify):
            self._verify([item])
        else:
            self._call(item)

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
