"""The chat engine against a real moa-server on 127.0.0.1 (through the link shaper where the link
matters), at T = 0: every answer is the target's own greedy answer to the whole conversation."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.engine.draftless import Draftless
from app.engine.events import (
    EngineEvent,
    Finished,
    LinkChanged,
    LinkState,
    OfflineBudgetReached,
    Repaired,
    Shown,
    StatsUpdated,
    TokenGenerated,
)
from app.engine.remote_chat import RemoteChatEngine
from drafts.data.conversations import Turn
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import DraftShape
from drafts.net import LinkProfile, ShaperThread, preset
from drafts.sampling import SamplingConfig
from drafts.target.chat import format_chat
from tests.app.engine.chat_scenario import (
    CLIENT,
    SERVER,
    TOKENIZER,
    answer,
    chat_engine,
    reference,
    run,
)
from tests.app.engine.scenario import engine_config
from tests.app.engine.servers import ServerThread, free_port

NEW = 12
GREEDY = DecodeConfig(max_new_tokens=NEW)
USER = ["hello", "tell more", "why", "and then", "ok bye"]


def shown(events: list[EngineEvent]) -> Shown:
    view = Shown()
    for event in events:
        view.apply(event)
    return view


def test_a_five_turn_chat_sends_only_each_turns_new_tokens_and_answers_as_the_target() -> None:
    async def chat(port: int) -> tuple[list[list[Turn]], list[Finished], Finished]:
        engine = chat_engine(port)
        await engine.open()
        messages: list[Turn] = []
        conversations, answers = [], []
        for text in USER:
            messages.append(Turn("user", text))
            finished, events = await answer(engine, messages, GREEDY)
            assert shown(events).text == finished.text == TOKENIZER.decode(finished.tokens)
            conversations.append(list(messages))
            answers.append(finished)
            messages.append(Turn("assistant", finished.text))
        await engine.close()
        fresh = chat_engine(port)  # the last turn, for a client that kept nothing
        await fresh.open()
        cold, _ = await answer(fresh, conversations[-1], GREEDY)
        await fresh.close()
        return conversations, answers, cold

    with ServerThread(SERVER) as server:
        conversations, answers, cold = run(chat(server.port))

    prompts = [format_chat(TOKENIZER, c) for c in conversations]
    for conversation, finished in zip(conversations, answers, strict=True):
        assert list(finished.tokens) == reference(conversation, NEW)
    assert answers[0].stats.prefill_tokens == len(prompts[0]) - 1
    for k in range(1, len(USER)):
        before = prompts[k - 1] + list(answers[k - 1].tokens)
        assert prompts[k][: len(before)] == before  # the template renders the answer as generated
        assert answers[k].stats.prefill_tokens == len(prompts[k]) - len(before)  # the new tokens only
    last = answers[-1].stats
    assert cold.tokens == answers[-1].tokens and cold.stats.prefill_tokens == len(prompts[-1]) - 1
    assert last.bytes_up < cold.stats.bytes_up  # the prompt goes up once: 117 tokens then, 14 now
    # the prompt's vectors come down once (after the first token: the server keeps them for Fetch)
    assert last.bytes_down < cold.stats.bytes_down


def test_editing_turn_two_of_four_rewinds_to_where_it_differs() -> None:
    async def chat(port: int) -> tuple[list[Turn], list[int], list[Finished], int, list[int]]:
        engine = chat_engine(port, kind="eagle")
        await engine.open()
        messages: list[Turn] = []
        for text in USER[:4]:
            messages.append(Turn("user", text))
            finished, _ = await answer(engine, messages, GREEDY)
            messages.append(Turn("assistant", finished.text))
        held = list(engine.engine.session.held)
        edited = [*messages[:2], Turn("user", "tell less")]  # turn 2's message, edited
        again, _ = await answer(engine, edited, GREEDY)
        follow = [*edited, Turn("assistant", again.text), Turn("user", "why")]
        then, _ = await answer(engine, follow, GREEDY)
        draft_kept = engine.engine.draft.drafter.observed
        await engine.close()
        return edited, held, [again, then], draft_kept, format_chat(TOKENIZER, follow)

    with ServerThread(SERVER) as server:
        edited, held, (again, then), draft_kept, follow_prompt = run(chat(server.port))

    prompt = format_chat(TOKENIZER, edited)
    differs = next(i for i, (a, b) in enumerate(zip(prompt, held, strict=False)) if a != b)
    assert prompt[:differs] == format_chat(TOKENIZER, [*edited[:2], Turn("user", "tell ")])[:differs]
    assert again.stats.prefill_tokens == len(prompt) - 1 - differs
    assert list(again.tokens) == reference(edited, NEW)
    follow = [*edited, Turn("assistant", again.text), Turn("user", "why")]
    assert list(then.tokens) == reference(follow, NEW)
    assert then.stats.prefill_tokens == len(follow_prompt) - len(prompt) - len(again.tokens)
    assert draft_kept >= len(follow_prompt) - 1  # the draft was cut back and went on, not reset


def test_a_message_sent_offline_is_answered_at_once_and_repaired_to_the_targets_answer() -> None:
    wifi = preset("wifi")
    changes: list[LinkChanged] = []

    async def chat(shaper: ShaperThread) -> tuple[list[EngineEvent], list[Turn], float]:
        engine = chat_engine(shaper.port, offline_budget=5)
        engine.subscribe(lambda e: changes.append(e) if isinstance(e, LinkChanged) else None)
        await engine.open()
        first, _ = await answer(engine, [Turn("user", USER[0])], GREEDY)
        shaper.set_profile(preset("offline"))
        while engine.state is not LinkState.RECONNECTING:  # noticed while idle
            await asyncio.sleep(0.02)
        messages = [Turn("user", USER[0]), Turn("assistant", first.text), Turn("user", USER[1])]
        sent = time.perf_counter()
        events: list[EngineEvent] = []
        first_offline = 0.0
        async for event in engine.stream(messages, GREEDY):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.source is TokenSource.OFFLINE and not first_offline:
                first_offline = time.perf_counter() - sent
            if isinstance(event, OfflineBudgetReached):
                shaper.set_profile(wifi)
        await engine.close()
        return events, messages, first_offline

    with (
        ServerThread(SERVER, resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=wifi) as shaper,
    ):
        events, conversation, first_offline = run(chat(shaper))

    finished = events[-1]
    assert isinstance(finished, Finished)
    assert list(finished.tokens) == reference(conversation, NEW)
    assert finished.stop is StopReason.MAX_TOKENS and finished.stats.unverified == 0
    offline = [e for e in events if isinstance(e, TokenGenerated) and e.source is TokenSource.OFFLINE]
    assert len(offline) == 5 and 0 < first_offline < 2.0  # at once (no connect timeout), and only the budget
    assert [e.budget for e in events if isinstance(e, OfflineBudgetReached)] == [5]
    assert any(isinstance(e, Repaired) for e in events)
    view = shown(events)
    assert view.tokens == list(finished.tokens) and view.text == finished.text
    states = [c.state for c in changes]
    assert states[:2] == [LinkState.CONNECTING, LinkState.ONLINE]
    assert LinkState.OFFLINE in states and states[-1] in (LinkState.ONLINE, LinkState.DEGRADED)


def test_cancel_ends_the_answer_at_once_keeping_it_and_the_next_turn_is_still_the_targets() -> None:
    far = LinkProfile("far", latency_ms=40)  # 80 ms round trips

    async def chat(port: int) -> tuple[Finished, float, Finished, list[Turn]]:
        engine = chat_engine(port, kind="independent")
        await engine.open()
        messages = [Turn("user", USER[0])]
        events: list[EngineEvent] = []
        cancelled_at = 0.0
        async for event in engine.stream(messages, DecodeConfig(max_new_tokens=60)):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position >= 2 and not cancelled_at:
                cancelled_at = time.perf_counter()
                asyncio.get_running_loop().create_task(engine.cancel())
        took = time.perf_counter() - cancelled_at
        cancelled = events[-1]
        assert isinstance(cancelled, Finished)
        follow = [*messages, Turn("assistant", cancelled.text), Turn("user", USER[1])]
        after, _ = await answer(engine, follow, GREEDY)
        await engine.close()
        return cancelled, took, after, follow

    with ServerThread(SERVER) as server, ShaperThread(upstream_port=server.port, profile=far) as shaper:
        cancelled, took, after, follow = run(chat(shaper.port))

    assert cancelled.stop is StopReason.CANCELLED and 3 <= len(cancelled.tokens) < 60
    assert list(cancelled.tokens) == reference([Turn("user", USER[0])], 60)[: len(cancelled.tokens)]
    assert took < 1.0  # an 80 ms round trip plus the engine's own work, with room for a busy machine
    assert list(after.tokens) == reference(follow, NEW)


def test_the_api_mode_chats_cancels_and_answers_as_the_target() -> None:
    async def chat(port: int) -> tuple[Finished, Finished, list[Turn]]:
        engine = RemoteChatEngine(engine_config(port), Draftless.of(CLIENT))
        await engine.open()
        assert engine.describe().mode == "api"
        messages = [Turn("user", USER[0])]
        events: list[EngineEvent] = []
        async for event in engine.stream(messages, DecodeConfig(max_new_tokens=60)):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position == 2:
                asyncio.get_running_loop().create_task(engine.cancel())
        cancelled = events[-1]
        assert isinstance(cancelled, Finished)
        follow = [*messages, Turn("assistant", cancelled.text), Turn("user", USER[1])]
        after, _ = await answer(engine, follow, GREEDY)
        await engine.close()
        return cancelled, after, follow

    with ServerThread(SERVER) as server, ShaperThread(upstream_port=server.port, profile=preset("wifi")) as shaper:
        cancelled, after, follow = run(chat(shaper.port))

    assert cancelled.stop is StopReason.CANCELLED and len(cancelled.tokens) < 60
    assert list(cancelled.tokens) == reference([Turn("user", USER[0])], 60)[: len(cancelled.tokens)]
    assert list(after.tokens) == reference(follow, NEW)


def test_the_link_is_reported_while_idle_from_connecting_to_online() -> None:
    port = free_port()
    changes: list[LinkChanged] = []

    async def idle() -> None:
        engine = chat_engine(port, backoff_max_s=0.2)
        engine.subscribe(lambda e: changes.append(e) if isinstance(e, LinkChanged) else None)
        await engine.open()
        await asyncio.sleep(0.5)  # no server yet
        server = ServerThread(SERVER, port=port).start()
        try:
            for _ in range(100):
                if engine.state is LinkState.ONLINE:
                    break
                await asyncio.sleep(0.05)
            server_up = engine.state
            await engine.close()
        finally:
            server.stop()
        assert server_up is LinkState.ONLINE

    run(idle())
    states = [c.state for c in changes]
    assert states[0] is LinkState.CONNECTING and LinkState.OFFLINE in states and states[-1] is LinkState.ONLINE
    assert changes[states.index(LinkState.OFFLINE)].reason  # says why


def test_stats_are_updated_during_the_answer_and_once_before_finished() -> None:
    async def chat(port: int) -> list[EngineEvent]:
        engine = chat_engine(port, stats_interval_s=0.02)
        await engine.open()
        _, events = await answer(engine, [Turn("user", USER[0])], DecodeConfig(max_new_tokens=40))
        await engine.close()
        return events

    far = LinkProfile("far", latency_ms=20)
    with ServerThread(SERVER) as server, ShaperThread(upstream_port=server.port, profile=far) as shaper:
        events = run(chat(shaper.port))

    stats = [e for e in events if isinstance(e, StatsUpdated)]
    finished = events[-1]
    assert isinstance(finished, Finished) and isinstance(events[-2], StatsUpdated)
    assert len(stats) >= 2 and stats[-1].new_tokens == len(finished.tokens)
    last = stats[-1]
    assert last.round_trips == finished.stats.round_trips and last.tau >= 1.0
    assert last.rtt_ms is not None and last.rtt_ms >= 30  # 2 x 20 ms, server time excluded
    assert last.acceptance_by_depth and all(0.0 <= a <= 1.0 for a in last.acceptance_by_depth)


def test_a_slow_link_is_reported_degraded_while_idle() -> None:
    slow = LinkProfile("slow", latency_ms=120)  # 240 ms round trips

    async def idle(port: int) -> LinkChanged | None:
        engine = chat_engine(port, degraded_rtt_ms=150, ping_timeout_s=2.0)
        seen: list[LinkChanged] = []
        engine.subscribe(lambda e: seen.append(e) if isinstance(e, LinkChanged) else None)
        await engine.open()
        for _ in range(100):
            if engine.state is LinkState.DEGRADED:
                break
            await asyncio.sleep(0.05)
        await engine.close()
        return next((c for c in seen if c.state is LinkState.DEGRADED), None)

    with ServerThread(SERVER) as server, ShaperThread(upstream_port=server.port, profile=slow) as shaper:
        degraded = run(idle(shaper.port))
    assert degraded is not None and degraded.rtt_ms is not None and degraded.rtt_ms > 150


def test_a_session_evicted_between_turns_is_replayed_and_the_answer_is_unchanged() -> None:
    async def chat(server: ServerThread) -> tuple[list[Turn], Finished]:
        engine = chat_engine(server.port)
        await engine.open()
        first, _ = await answer(engine, [Turn("user", USER[0])], GREEDY)
        server.evict_sessions()
        messages = [Turn("user", USER[0]), Turn("assistant", first.text), Turn("user", USER[1])]
        second, _ = await answer(engine, messages, GREEDY)
        await engine.close()
        return messages, second

    with ServerThread(SERVER) as server:
        messages, second = run(chat(server))
    assert list(second.tokens) == reference(messages, NEW)
    assert second.stats.prefill_tokens == len(format_chat(TOKENIZER, messages)) - 1  # everything again


def test_at_a_temperature_a_chat_samples_each_turn_to_its_length_and_still_sends_only_new_tokens() -> None:
    sampled = DecodeConfig(max_new_tokens=NEW, sampling=SamplingConfig(temperature=1.0, seed=7))

    async def chat(port: int) -> tuple[list[Turn], list[Finished]]:
        engine = chat_engine(port, kind="eagle")
        await engine.open()
        messages: list[Turn] = []
        answers = []
        for text in USER[:3]:
            messages.append(Turn("user", text))
            finished, _ = await answer(engine, messages, sampled)
            answers.append(finished)
            messages.append(Turn("assistant", finished.text))
        await engine.close()
        return messages, answers

    with ServerThread(SERVER) as server:
        messages, answers = run(chat(server.port))
    assert all(len(a.tokens) == NEW and a.stop is StopReason.MAX_TOKENS for a in answers)
    for k in (1, 2):
        prompt = format_chat(TOKENIZER, messages[: 2 * k + 1])
        before = format_chat(TOKENIZER, messages[: 2 * k - 1]) + list(answers[k - 1].tokens)
        assert answers[k].stats.prefill_tokens == len(prompt) - len(before)


@pytest.mark.parametrize("kind", ["moa", "eagle"])
def test_trees_over_the_network_answer_as_the_target_turn_after_turn(
    kind: str,
) -> None:
    tree = DecodeConfig(max_new_tokens=24, shape=DraftShape.parse_tree("3,2,6"))

    async def chat(port: int) -> tuple[list[Turn], Finished]:
        engine = chat_engine(port, kind=kind)
        await engine.open()
        messages = [Turn("user", USER[0])]
        first, _ = await answer(engine, messages, tree)
        messages += [Turn("assistant", first.text), Turn("user", USER[1])]
        second, _ = await answer(engine, messages, tree)
        await engine.close()
        return messages, second

    with ServerThread(SERVER) as server:
        messages, second = run(chat(server.port))
    assert list(second.tokens) == reference(messages, 24)
    assert 0 < second.stats.verify_rounds <= len(second.tokens)  # each tree round yields at least a token


def test_confidence_chains_stop_where_the_draft_is_unsure_and_still_answer_as_the_target() -> None:
    plain = DecodeConfig(max_new_tokens=24)
    confident = DecodeConfig(max_new_tokens=24, shape=DraftShape(min_confidence=0.5))

    async def chat(port: int) -> tuple[Finished, Finished]:
        engine = chat_engine(port, kind="eagle", gamma_min=4, gamma_max=4)
        await engine.open()
        first, _ = await answer(engine, [Turn("user", USER[0])], plain)
        engine.engine.forget()
        second, _ = await answer(engine, [Turn("user", USER[0])], confident)
        await engine.close()
        return first, second

    with ServerThread(SERVER) as server:
        first, second = run(chat(server.port))
    assert list(first.tokens) == list(second.tokens) == reference([Turn("user", USER[0])], 24)
    assert second.stats.mean_gamma < first.stats.mean_gamma  # a random draft is rarely sure: shorter chains
