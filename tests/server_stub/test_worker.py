"""The inference worker: arrival order, consecutive verifies as one batch, errors to their awaiters."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from drafts.acceptance import Acceptance
from drafts.sampling import SamplingConfig
from drafts.target.activations import Activations
from drafts.tree import DraftTree
from server_stub.backend.base import StepTimings, VerifyJob, VerifyOutcome
from server_stub.cancels import CancelToken
from server_stub.errors import RequestCancelledError, ServerError, SessionUnknownError
from server_stub.worker import InferenceWorker


class RecordingBackend:
    """A fake backend that records the order of calls and the batches it was given."""

    def __init__(self) -> None:
        self.log: list[Any] = []

    def verify(self, jobs: Sequence[VerifyJob]) -> list[VerifyOutcome | ServerError]:
        self.log.append(("verify", [job.session_id for job in jobs]))
        return [
            SessionUnknownError(f"{job.session_id} is gone")
            if job.session_id == "gone"
            else VerifyOutcome(job.session_id, Acceptance((), 7), 1, Activations(), StepTimings(1.0, len(jobs)))
            for job in jobs
        ]

    def note(self, what: str) -> str:
        self.log.append(what)
        return what


def note(what: str) -> Callable[[Any], str]:
    """A worker call that records ``what`` in the fake backend's log."""
    return lambda backend: backend.note(what)


def job(session_id: str) -> VerifyJob:
    return VerifyJob(session_id, 1, DraftTree.chain([]), SamplingConfig())


def test_verifies_queued_together_run_as_one_batch_in_arrival_order_with_the_calls() -> None:
    backend = RecordingBackend()

    async def scenario() -> list[Any]:
        worker = InferenceWorker(backend)  # type: ignore[arg-type]
        pending = [
            asyncio.ensure_future(worker.verify(job("a"))),
            asyncio.ensure_future(worker.verify(job("b"))),
            asyncio.ensure_future(worker.call(note("between"))),
            asyncio.ensure_future(worker.verify(job("c"))),
        ]
        await asyncio.sleep(0)  # everything is queued before the thread starts
        worker.start()
        results = await asyncio.gather(*pending)
        await worker.stop()
        return results

    results = asyncio.run(scenario())

    assert backend.log == [("verify", ["a", "b"]), "between", ("verify", ["c"])]
    assert [r[0].session_id for r in (results[0], results[1], results[3])] == ["a", "b", "c"]
    assert results[2][0] == "between" and results[2][1] >= 0.0  # (result, ms queued)


def test_a_jobs_error_is_raised_to_its_awaiter_only() -> None:
    backend = RecordingBackend()

    async def scenario() -> tuple[Any, Any]:
        worker = InferenceWorker(backend)  # type: ignore[arg-type]
        worker.start()
        gone, fine = await asyncio.gather(worker.verify(job("gone")), worker.verify(job("a")), return_exceptions=True)
        await worker.stop()
        return gone, fine

    gone, fine = asyncio.run(scenario())

    assert isinstance(gone, SessionUnknownError)
    assert isinstance(fine, tuple) and fine[0].session_id == "a"


def test_a_failing_call_raises_and_the_worker_goes_on() -> None:
    async def scenario() -> str:
        worker = InferenceWorker(RecordingBackend())  # type: ignore[arg-type]
        worker.start()
        with pytest.raises(ZeroDivisionError):
            await worker.call(lambda b: 1 // 0)
        result, _ = await worker.call(note("after"))
        await worker.stop()
        return result

    assert asyncio.run(scenario()) == "after"


def test_after_stop_nothing_more_is_accepted() -> None:
    async def scenario() -> None:
        worker = InferenceWorker(RecordingBackend())  # type: ignore[arg-type]
        worker.start()
        await worker.stop()
        with pytest.raises(RuntimeError, match="stopped"):
            await worker.call(note("late"))

    asyncio.run(scenario())


def test_a_verify_does_not_wait_behind_other_sessions_prefills() -> None:
    """32 new connections prefilling at once must not hold up a session that is already verifying."""
    backend = RecordingBackend()

    async def scenario() -> None:
        worker = InferenceWorker(backend)  # type: ignore[arg-type]
        prefills = [asyncio.ensure_future(worker.call(note(f"prefill {i}"), session=f"new{i}")) for i in range(32)]
        verify = asyncio.ensure_future(worker.verify(job("old")))
        await asyncio.sleep(0)  # everything is queued before the thread starts
        worker.start()
        await asyncio.gather(verify, *prefills)
        await worker.stop()

    asyncio.run(scenario())

    assert backend.log.index(("verify", ["old"])) <= 1  # at most one prefill before it, not 32
    assert [e for e in backend.log if isinstance(e, str)] == [f"prefill {i}" for i in range(32)]  # calls in order


def test_one_sessions_work_keeps_its_order_while_other_sessions_interleave() -> None:
    backend = RecordingBackend()

    async def scenario() -> None:
        worker = InferenceWorker(backend)  # type: ignore[arg-type]
        pending = [
            asyncio.ensure_future(worker.call(note("a prefill"), session="a")),
            asyncio.ensure_future(worker.verify(job("a"))),
            asyncio.ensure_future(worker.call(note("b prefill"), session="b")),
            asyncio.ensure_future(worker.verify(job("c"))),
        ]
        await asyncio.sleep(0)
        worker.start()
        await asyncio.gather(*pending)
        await worker.stop()

    asyncio.run(scenario())

    assert backend.log.index("a prefill") < backend.log.index(("verify", ["a"]))  # a's verify after a's prefill
    assert backend.log[0] == ("verify", ["c"])  # c was not made to wait for a's or b's prefill


def test_a_cancelled_job_is_answered_cancelled_without_running() -> None:
    backend = RecordingBackend()

    async def scenario() -> Any:
        worker = InferenceWorker(backend)  # type: ignore[arg-type]
        token = CancelToken()
        cancelled = asyncio.ensure_future(worker.verify(job("a"), token))
        kept = asyncio.ensure_future(worker.verify(job("b")))
        await asyncio.sleep(0)
        token.cancel("Cancel")
        worker.start()
        results = await asyncio.gather(cancelled, kept, return_exceptions=True)
        await worker.stop()
        return results

    cancelled, kept = asyncio.run(scenario())

    assert isinstance(cancelled, RequestCancelledError) and isinstance(kept, tuple)
    assert backend.log == [("verify", ["b"])]


def test_slow_prefills_and_a_verifying_session_take_turns() -> None:
    """A session verifying round after round gets a round in between every slow prefill or so, not after all."""
    backend = RecordingBackend()

    def slow(what: str) -> Callable[[Any], str]:
        def run(b: Any) -> str:
            time.sleep(0.03)
            return str(b.note(what))

        return run

    async def scenario() -> None:
        worker = InferenceWorker(backend)  # type: ignore[arg-type]
        prefills = [asyncio.ensure_future(worker.call(slow(f"prefill {i}"), session=f"new{i}")) for i in range(8)]
        worker.start()
        for _ in range(4):
            await worker.verify(job("old"))
        await asyncio.gather(*prefills)
        await worker.stop()

    asyncio.run(scenario())

    rounds = [i for i, entry in enumerate(backend.log) if entry == ("verify", ["old"])]
    assert len(rounds) == 4 and rounds[-1] < len(backend.log) - 1  # all four verifies ran before the last prefill
    assert all(later - earlier <= 3 for earlier, later in zip([-1, *rounds], rounds, strict=False))
