"""What review found: closing mid-answer, opening twice, abandoned requests, a draftless client
whose verifier never returns, a synchronous caller that cancels."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from typing import Any

import pytest
import torch

from app.engine.draftless import Draftless
from app.engine.errors import VerifierUnavailableError
from app.engine.events import EngineEvent, Finished, TokenGenerated
from app.engine.remote import RemoteEngine
from app.engine.session import VerifierSession
from app.engine.sync import EngineThread
from drafts.data.conversations import Turn
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.stopping import StopReason
from drafts.net import LinkProfile, ShaperThread, preset
from drafts.protocol import Prefill
from tests.app.engine.chat_scenario import CLIENT, SERVER, chat_draft, chat_engine, reference, run
from tests.app.engine.scenario import PROMPT, SERVER_RUNNER, client_draft, engine_config
from tests.app.engine.servers import ServerThread

FAR = LinkProfile("far", latency_ms=30)


def test_closing_mid_answer_cancels_it_first_and_the_stream_ends_cleanly() -> None:
    problems: list[dict[str, Any]] = []

    async def chat(port: int) -> list[EngineEvent]:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: problems.append(context))
        engine = chat_engine(port)
        await engine.open()
        events: list[EngineEvent] = []
        closing = None
        async for event in engine.stream([Turn("user", "hello")], DecodeConfig(max_new_tokens=60)):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position == 1:
                closing = asyncio.get_running_loop().create_task(engine.close())
        assert closing is not None
        await closing
        await asyncio.sleep(0.3)  # a keeper left behind would fail now, with nothing to watch
        gc.collect()
        return events

    with ServerThread(SERVER) as server, ShaperThread(upstream_port=server.port, profile=FAR) as shaper:
        events = run(chat(shaper.port))
    assert not problems

    finished = events[-1]
    assert isinstance(finished, Finished) and finished.stop is StopReason.CANCELLED
    assert list(finished.tokens) == reference([Turn("user", "hello")], 60)[: len(finished.tokens)]


def test_opening_twice_keeps_one_session_and_one_connection() -> None:
    async def twice(port: int) -> tuple[bool, bool]:
        engine = chat_engine(port)
        await engine.open()
        session, keeper = engine.engine.session, engine._keeper
        await engine.open()
        same = engine.engine.session is session and engine._keeper is keeper
        await engine.close()
        return same, engine._keeper is None

    with ServerThread(SERVER) as server:
        same, stopped = run(twice(server.port))
    assert same and stopped


def test_a_request_abandoned_by_its_asker_leaves_no_future_for_the_link_to_fail_later() -> None:
    async def scenario(port: int) -> tuple[int, list[dict[str, Any]]]:
        problems: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: problems.append(context))
        session = VerifierSession(engine_config(port), client_draft("moa"), lambda event: None)
        await session.start(PROMPT[:-1])
        asking = asyncio.create_task(session.ask(Prefill(0, torch.tensor(PROMPT[:4]))))
        await asyncio.sleep(0)  # sent, not answered
        asking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asking
        link = session.link
        assert link is not None
        left = len(link._pending)
        await session.close()  # the link's end fails whatever is still pending
        gc.collect()
        await asyncio.sleep(0.05)
        return left, problems

    with ServerThread(SERVER_RUNNER) as server, ShaperThread(upstream_port=server.port, profile=FAR) as shaper:
        left, problems = run(scenario(shaper.port))
    assert left == 0 and not problems


def test_a_draftless_client_gives_up_on_a_verifier_that_never_returns_after_its_deadline() -> None:
    async def scenario(shaper: ShaperThread) -> float:
        config = engine_config(shaper.port, connect_timeout_s=0.5, offline_wait_s=0.5)
        engine = RemoteEngine(config, Draftless.of(SERVER_RUNNER))
        await engine.open()
        lost_at = 0.0
        with pytest.raises(VerifierUnavailableError):
            async for event in engine.stream(PROMPT, DecodeConfig(max_new_tokens=60)):
                if isinstance(event, TokenGenerated) and event.position == 1 and not lost_at:
                    shaper.set_profile(preset("offline"))
                    lost_at = time.perf_counter()
        took = time.perf_counter() - lost_at
        await engine.close()
        return took

    slow = LinkProfile("slow", latency_ms=30)
    with ServerThread(SERVER_RUNNER) as server, ShaperThread(upstream_port=server.port, profile=slow) as shaper:
        took = run(scenario(shaper))
    assert took < 5.0


def test_a_synchronous_caller_cancels_and_the_engine_serves_the_next_prompt() -> None:
    with (
        ServerThread(SERVER) as server,
        ShaperThread(upstream_port=server.port, profile=FAR) as shaper,
        EngineThread(engine_config(shaper.port), chat_draft("independent")) as engine,
    ):
        events = []
        for event in engine.stream(PROMPT, DecodeConfig(max_new_tokens=60)):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position == 1:
                engine.cancel()
        again = engine.generate(PROMPT, DecodeConfig(max_new_tokens=10))

    cancelled = events[-1]
    assert isinstance(cancelled, Finished) and cancelled.stop is StopReason.CANCELLED
    assert list(again.tokens) == _greedy(10)


def _greedy(n: int) -> list[int]:
    return generate_autoregressive(CLIENT, PROMPT, DecodeConfig(max_new_tokens=n)).tokens


def test_a_chat_consumer_that_stops_reading_stops_the_answer_and_the_next_one_is_the_targets() -> None:
    async def chat(port: int) -> tuple[bool, Finished, list[Turn]]:
        engine = chat_engine(port)
        await engine.open()
        messages = [Turn("user", "hello")]
        async for event in engine.stream(messages, DecodeConfig(max_new_tokens=60)):
            if isinstance(event, TokenGenerated) and event.position == 1:
                break
        await asyncio.sleep(0.2)  # the abandoned generator is closed by the loop's finalizer hook
        stopped = engine.engine._producer is None  # nothing runs on behind the reader's back
        follow = [*messages, Turn("assistant", "ok"), Turn("user", "why")]
        after = [e async for e in engine.stream(follow, DecodeConfig(max_new_tokens=10))][-1]
        await engine.close()
        assert isinstance(after, Finished)
        return stopped, after, follow

    with ServerThread(SERVER) as server, ShaperThread(upstream_port=server.port, profile=FAR) as shaper:
        stopped, after, follow = run(chat(shaper.port))
    assert stopped and list(after.tokens) == reference(follow, 10)


def test_cancel_stops_a_generate_on_the_server_long_before_its_end() -> None:
    long = 230  # the tiny target's context holds 256

    async def scenario(port: int, server: ServerThread) -> tuple[Finished, int]:
        engine = RemoteEngine(engine_config(port), Draftless.of(SERVER_RUNNER))
        await engine.open()
        events = []
        async for event in engine.stream(PROMPT, DecodeConfig(max_new_tokens=long)):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position == 0:
                await engine.cancel()
        await asyncio.sleep(0.5)  # the server would have finished by now, had it not stopped
        held = max(s.target.length for s in server.backend._sessions.values() if s.target is not None)
        await engine.close()
        finished = events[-1]
        assert isinstance(finished, Finished)
        return finished, held

    with ServerThread(SERVER_RUNNER) as server, ShaperThread(upstream_port=server.port, profile=FAR) as shaper:
        finished, held = run(scenario(shaper.port, server))
    assert finished.stop is StopReason.CANCELLED and len(finished.tokens) < long
    assert held < len(PROMPT) + long // 2, f"the server decoded on to {held} tokens"
