"""The prompt's intake by the draft, queued on its worker: the first token does not wait for it.

A real moa-server on 127.0.0.1 with the tiny target; the draft is the perfect one whose intake of
the prompt blocks until the test lets it go, so the order of events is the engine's, not timing's.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.events import Finished, TokenGenerated
from app.engine.intake import Intake
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import DraftShape
from drafts.neural.drafter import NeuralDrafter
from drafts.protocol import Prefilled
from drafts.target.activations import Activations
from tests.app.engine.scenario import CLIENT_RUNNER, PROMPT, SERVER_RUNNER, engine_config, moa_compressor, reference
from tests.app.engine.servers import ServerThread
from tests.app.engine.target_draft import TargetAsDraft
from tests.tiny_drafts import tiny_llama, tiny_target_runner

NEW_TOKENS = 12
DECODE = DecodeConfig(max_new_tokens=NEW_TOKENS, shape=DraftShape(gamma=4))
WAIT_S = 30.0  # a bound on every wait, never reached when the engine is right


class HeldIntake(TargetAsDraft):
    """The perfect draft, whose intake of the prompt (the observe from position 0) waits for ``let_go``;
    ``fail``: it raises there instead."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(tiny_target_runner(tiny_llama()))
        self.fail = fail
        self.reading = threading.Event()  # the intake has begun
        self.let_go = threading.Event()
        self.read = threading.Event()  # ... and ended

    def observe(self, committed: list[int], start: int, acts: Activations) -> None:
        if start == 0:
            self.reading.set()
            if self.fail:
                raise RuntimeError("the draft failed to take in the prompt")
            assert self.let_go.wait(WAIT_S), "the test never let the intake go"
        super().observe(committed, start, acts)
        if start == 0:
            self.read.set()


def held(model: HeldIntake) -> ClientDraft:
    return ClientDraft.of(NeuralDrafter(model), "target-as-draft", CLIENT_RUNNER)


def server() -> ServerThread:
    return ServerThread(SERVER_RUNNER, moa_compressor())


def chain_config(port: int, stream: bool) -> EngineConfig:
    """The engine's settings for the held target draft, which drafts chains only (a stream's fan is 1 wide)."""
    return engine_config(port, stream=stream, stream_width=1)


@pytest.mark.parametrize("stream", [False, True], ids=["rounds", "stream"])
def test_the_first_token_is_shown_while_the_draft_still_takes_in_the_prompt(stream: bool) -> None:
    model = HeldIntake()
    pending_at_first: list[bool] = []
    with server() as verifier, EngineThread(chain_config(verifier.port, stream), held(model)) as engine:
        events: list[Any] = []
        for event in engine.stream(PROMPT, DECODE):
            events.append(event)
            if isinstance(event, TokenGenerated) and not pending_at_first:
                pending_at_first.append(not model.read.is_set())  # it cannot end before let_go
                model.let_go.set()

    assert pending_at_first == [True]  # the first token came before the draft had taken in the prompt
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.stop is StopReason.MAX_TOKENS
    assert list(finished.tokens) == reference(NEW_TOKENS)
    assert model.read.is_set()


@pytest.mark.parametrize("stream", [False, True], ids=["rounds", "stream"])
def test_a_failed_intake_is_raised_to_the_caller_not_lost(stream: bool) -> None:
    model = HeldIntake(fail=True)
    with (
        server() as verifier,
        EngineThread(chain_config(verifier.port, stream), held(model)) as engine,
        pytest.raises(RuntimeError, match="failed to take in the prompt"),
    ):
        engine.generate(PROMPT, DECODE)


def test_a_cancel_while_the_draft_takes_in_the_prompt_ends_at_once_and_the_next_answer_is_the_targets() -> None:
    model = HeldIntake()
    with server() as verifier, EngineThread(engine_config(verifier.port), held(model)) as engine:
        events: list[Any] = []
        for event in engine.stream(PROMPT, DECODE):
            events.append(event)
            if isinstance(event, TokenGenerated):
                engine.cancel()  # returns once the generation ended: the intake is still held
        ended_before_the_intake = not model.read.is_set()
        model.let_go.set()
        again = engine.generate(PROMPT, DECODE)

    cancelled = events[-1]
    assert ended_before_the_intake
    assert isinstance(cancelled, Finished) and cancelled.stop is StopReason.CANCELLED
    assert list(cancelled.tokens) == reference(1)
    assert list(again.tokens) == reference(NEW_TOKENS)


# -- the Intake alone, on a worker thread of its own ---------------------------------------------
def on_worker(scenario: Callable[[Intake, list[Any]], Any]) -> tuple[Any, list[Any]]:
    """Run ``scenario(intake, seen)`` on a loop whose intake's jobs go to a one-thread worker; seen: the
    (start, tokens) each job took in, in the order it ran."""
    seen: list[Any] = []
    worker = ThreadPoolExecutor(1)

    def take_in(start: int, tokens: list[int], reply: Prefilled | None) -> None:
        if start < 0:
            raise ValueError(f"chunk at {start}")
        seen.append((start, tokens))

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        intake = Intake(lambda fn, *a: loop.run_in_executor(worker, functools.partial(fn, *a)), take_in)
        return await scenario(intake, seen)

    try:
        return asyncio.run(main()), seen
    finally:
        worker.shutdown()


def test_chunks_are_taken_in_in_order_and_settle_raises_the_first_failure() -> None:
    async def scenario(intake: Intake, seen: list[Any]) -> str:
        for start in (0, 4, -1, 8, -2):
            await intake.take(start, [start], None)  # type: ignore[arg-type]  # returns at once
        try:
            await intake.settle()
        except ValueError as exc:
            return str(exc)
        return "nothing raised"

    raised, seen = on_worker(scenario)

    assert raised == "chunk at -1"
    assert seen == [(0, [0]), (4, [4]), (8, [8])]  # every job ran, in order, the failures' too


def test_a_drop_cancels_the_chunks_not_begun() -> None:
    gate = threading.Event()

    async def scenario(intake: Intake, seen: list[Any]) -> bool:
        intake.after(gate.wait, WAIT_S)  # holds the worker
        for start in (0, 4):
            await intake.take(start, [start], None)  # type: ignore[arg-type]
        queued = list(intake.queued)
        intake.drop()
        await asyncio.sleep(0)  # the cancels reach the worker's queue (done-callbacks, on the loop)
        gate.set()
        intake.after(lambda: None)
        await intake.settle()  # behind where the dropped chunks were: they would have run by now
        return all(f.cancelled() for f in queued)

    dropped, seen = on_worker(scenario)

    assert dropped and seen == []
