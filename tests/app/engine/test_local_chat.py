"""The local engine on a tiny random target and draft: the ChatEngine events, conversations, cancel.

At temperature 0 every answer is plain decoding (``ar``) of the rendered conversation; later
turns run only the tokens after the common prefix with what the target holds. The same on the
real SmolLM2 with the shipped MoA draft: ``test_local_chat_smollm2.py``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from app.engine.chat import Message
from app.engine.events import (
    DraftRejected,
    EngineEvent,
    Finished,
    LinkChanged,
    LinkState,
    Shown,
    StatsUpdated,
    TokenGenerated,
)
from app.engine.local_chat import LocalChatEngine
from app.engine.local_models import LocalConfig
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import Drafter, DraftShape
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.errors import ConfigError
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from drafts.target.chat import common_prefix
from drafts.target.runner import TargetRunner
from tests.app.engine.target_draft import TargetAsDraft
from tests.counting_runner import CountingRunner
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner

T = TypeVar("T")
CONFIG = DecodeConfig(24, SamplingConfig(), DraftShape(gamma=3))
FIRST: list[Message] = [Message("system", "Be brief."), Message("user", "Name three colours.")]


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(scenario(), 60))


@pytest.fixture(scope="module")
def runner() -> CountingRunner:
    return CountingRunner.of(tiny_target_runner(tiny_llama(seed=0)))


def moa(runner: TargetRunner) -> NeuralDrafter:
    return NeuralDrafter(random_draft("moa", runner, seed=4))


def ar_tokens(runner: TargetRunner, messages: Sequence[Message], config: DecodeConfig = CONFIG) -> list[int]:
    return generate_autoregressive(runner, runner.format_chat(messages), config).tokens


async def collect(
    engine: LocalChatEngine, messages: Sequence[Message], config: DecodeConfig = CONFIG
) -> list[EngineEvent]:
    return [event async for event in engine.stream(messages, config)]


def finished(events: list[EngineEvent]) -> Finished:
    assert isinstance(events[-1], Finished)
    assert sum(isinstance(e, Finished) for e in events) == 1
    return events[-1]


def reply(messages: Sequence[Message], answer: Finished, user: str) -> list[Message]:
    return [*messages, Message("assistant", answer.text), Message("user", user)]


@pytest.mark.parametrize("draft", ["moa", "none"])
def test_an_answer_at_temperature_zero_is_plain_decoding_and_its_events_fold_into_its_text(
    runner: CountingRunner, draft: str
) -> None:
    engine = LocalChatEngine.of(runner, moa(runner) if draft == "moa" else None)

    async def scenario() -> list[EngineEvent]:
        await engine.open()
        events = await collect(engine, FIRST)
        await engine.close()
        return events

    events = run(scenario)

    end = finished(events)
    shown = Shown()
    for event in events:
        shown.apply(event)
    tokens = [e for e in events if isinstance(e, TokenGenerated)]
    assert list(end.tokens) == ar_tokens(runner, FIRST)
    assert shown.tokens == list(end.tokens) and shown.text == end.text == runner.decode(end.tokens)
    assert [e.position for e in tokens] == list(range(len(end.tokens)))
    assert all(e.char_start == sum(len(t.text) for t in tokens[: e.position]) for e in tokens)
    assert end.stop is StopReason.MAX_TOKENS
    assert end.stats.new_tokens == len(end.tokens) == end.stats.accepted + end.stats.target
    if draft == "none":
        assert set(shown.sources) == {TokenSource.TARGET} and not shown.rejected
        assert end.stats.round_trips == len(end.tokens) - 1  # a step per token after the prefill's


def test_a_perfect_draft_is_accepted_whole_over_two_turns_and_the_output_is_still_plain_decoding(
    runner: CountingRunner,
) -> None:
    engine = LocalChatEngine.of(runner, NeuralDrafter(TargetAsDraft(tiny_target_runner(runner.model))))

    async def scenario() -> tuple[list[EngineEvent], list[EngineEvent], list[Message]]:
        await engine.open()
        first = await collect(engine, FIRST)
        second_messages = reply(FIRST, finished(first), "And three more?")
        return first, await collect(engine, second_messages), second_messages

    first, second, second_messages = run(scenario)

    for events, messages in ((first, FIRST), (second, second_messages)):
        end = finished(events)
        assert list(end.tokens) == ar_tokens(runner, messages)
        stats = events[-2]
        assert isinstance(stats, StatsUpdated) and stats.acceptance_rate == 1.0 and stats.tau == 4.0
        assert stats.acceptance_by_depth == (1.0, 1.0, 1.0) and end.stats.accepted > end.stats.target
        assert not any(isinstance(e, DraftRejected) for e in events)
    assert finished(first).stats.prefill_tokens == len(runner.format_chat(FIRST))
    reused = engine.conversation.reused
    assert reused >= len(runner.format_chat(FIRST))
    assert finished(second).stats.prefill_tokens == len(runner.format_chat(second_messages)) - reused


def test_drafts_the_target_refused_come_before_its_own_token_at_that_position(runner: CountingRunner) -> None:
    engine = LocalChatEngine.of(runner, moa(runner))

    async def scenario() -> list[EngineEvent]:
        await engine.open()
        return await collect(engine, FIRST)

    events = run(scenario)

    rejected = [(i, e) for i, e in enumerate(events) if isinstance(e, DraftRejected)]
    assert rejected, "a random draft gets refused"
    for i, event in rejected:
        following = events[i + 1]
        assert isinstance(following, TokenGenerated) and following.source is TokenSource.TARGET
        assert following.position == event.position and following.token != event.tokens[0]


def test_the_next_turn_runs_only_what_follows_the_common_prefix_and_is_still_plain_decoding(
    runner: CountingRunner,
) -> None:
    engine = LocalChatEngine.of(runner, moa(runner))
    prefills: list[int] = []

    async def scenario() -> tuple[Finished, Finished, list[Message]]:
        await engine.open()
        first = finished(await collect(engine, FIRST))
        held = list(engine.conversation.tokens)
        second_messages = reply(FIRST, first, "And three more?")
        runner.calls = []
        second = finished(await collect(engine, second_messages))
        prefills.extend([runner.calls[0], common_prefix(held, runner.format_chat(second_messages))])
        return first, second, second_messages

    first, second, second_messages = run(scenario)

    prompt = runner.format_chat(second_messages)
    ran_first, kept = prefills
    assert kept >= len(runner.format_chat(FIRST))  # the whole first prompt at least
    assert engine.conversation.reused == kept
    assert ran_first == len(prompt) - kept  # the prefill ran only the rest
    assert list(second.tokens) == ar_tokens(runner, second_messages)


def test_a_sampled_chat_keeps_its_prefix_reuse_and_repeats_itself_for_a_seed(runner: CountingRunner) -> None:
    sampled = DecodeConfig(24, SamplingConfig(temperature=1.0, seed=7), DraftShape(gamma=3))

    async def chat() -> tuple[Finished, Finished, list[Message]]:
        engine = LocalChatEngine.of(runner, moa(runner))
        await engine.open()
        first = finished(await collect(engine, FIRST, sampled))
        second_messages = reply(FIRST, first, "And three more?")
        return first, finished(await collect(engine, second_messages, sampled)), second_messages

    first, second, second_messages = run(chat)
    again = run(chat)

    assert (first.tokens, second.tokens) == (again[0].tokens, again[1].tokens)
    assert len(first.tokens) == len(second.tokens) == 24
    assert second.stats.prefill_tokens <= len(runner.format_chat(second_messages)) - len(runner.format_chat(FIRST))


@pytest.mark.parametrize("drafter", ["moa", "lookup"])
def test_an_edited_earlier_message_rewinds_to_it_and_answers_as_from_scratch(
    runner: CountingRunner, drafter: str
) -> None:
    draft: Drafter = moa(runner) if drafter == "moa" else PromptLookupDrafter()
    engine = LocalChatEngine.of(runner, draft)
    edited = [FIRST[0], Message("user", "Name two colours.")]

    async def scenario() -> Finished:
        await engine.open()
        first = finished(await collect(engine, FIRST))
        finished(await collect(engine, reply(FIRST, first, "More?")))
        return finished(await collect(engine, edited))

    answer = run(scenario)

    assert engine.conversation.reused < len(runner.format_chat(FIRST))
    assert engine.conversation.reused == common_prefix(runner.format_chat(FIRST), runner.format_chat(edited))
    assert list(answer.tokens) == ar_tokens(runner, edited)


class UnrewindableDraft(TargetAsDraft):
    """A trained-draft model that cannot cut its caches back."""

    def truncate(self, length: int) -> None:
        raise NotImplementedError


def test_a_draft_that_cannot_cut_back_restarts_and_the_answers_stay_plain_decoding(runner: CountingRunner) -> None:
    engine = LocalChatEngine.of(runner, NeuralDrafter(UnrewindableDraft(tiny_target_runner(runner.model))))

    async def scenario() -> tuple[Finished, Finished, list[Message]]:
        await engine.open()
        first = finished(await collect(engine, FIRST))
        second_messages = reply(FIRST, first, "And three more?")
        return first, finished(await collect(engine, second_messages)), second_messages

    first, second, second_messages = run(scenario)

    assert list(first.tokens) == ar_tokens(runner, FIRST)
    assert list(second.tokens) == ar_tokens(runner, second_messages)
    assert engine.conversation.reused >= len(runner.format_chat(FIRST))  # the target's cache is kept


def test_cancel_ends_the_stream_with_the_partial_answer_and_the_next_turn_goes_on(runner: CountingRunner) -> None:
    engine = LocalChatEngine.of(runner, moa(runner))
    long = DecodeConfig(180, SamplingConfig(), DraftShape(gamma=3))

    async def scenario() -> tuple[list[EngineEvent], Finished]:
        await engine.open()
        events: list[EngineEvent] = []
        async for event in engine.stream(FIRST, long):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position == 0:
                await engine.cancel()
        cancelled = finished(events)
        return events, finished(await collect(engine, reply(FIRST, cancelled, "Go on.")))

    events, after = run(scenario)

    end = finished(events)
    assert end.stop is StopReason.CANCELLED
    assert 0 < len(end.tokens) < 180
    assert list(end.tokens) == ar_tokens(runner, FIRST, long)[: len(end.tokens)]
    assert isinstance(events[-2], StatsUpdated)
    assert list(after.tokens) == ar_tokens(runner, reply(FIRST, end, "Go on."))


def test_close_cancels_a_running_stream(runner: CountingRunner) -> None:
    engine = LocalChatEngine.of(runner, moa(runner))
    long = DecodeConfig(180, SamplingConfig(), DraftShape(gamma=3))

    async def scenario() -> Finished:
        await engine.open()
        first_token = asyncio.Event()
        engine.subscribe(lambda event: first_token.set() if isinstance(event, TokenGenerated) else None)
        task = asyncio.create_task(collect(engine, FIRST, long))
        await first_token.wait()
        await engine.close()
        return finished(await task)

    assert run(scenario).stop is StopReason.CANCELLED


def test_subscribers_get_link_local_once_then_every_event_on_the_callers_thread(runner: CountingRunner) -> None:
    engine = LocalChatEngine.of(runner, moa(runner), LocalConfig(draft="moa", stats_interval_s=1e-6))
    seen: list[tuple[EngineEvent, int]] = []
    engine.subscribe(lambda event: seen.append((event, threading.get_ident())))

    async def scenario() -> list[EngineEvent]:
        await engine.open()
        await engine.open()
        return await collect(engine, FIRST)

    events = run(scenario)

    assert seen[0][0] == LinkChanged(LinkState.LOCAL, None, "draft and target on this device")
    assert [event for event, _ in seen[1:]] == events
    assert {thread for _, thread in seen} == {threading.get_ident()}
    stats = [e for e in events if isinstance(e, StatsUpdated)]
    end = finished(events)
    assert len(stats) > 2  # one per round at this interval, and the last before Finished
    last = stats[-1]
    assert last.rtt_ms is None and last.bytes_up_per_token == last.bytes_down_per_token == 0
    assert last.shape == CONFIG.shape.describe() == "chain 3"  # the status bar shows the shape drafted
    assert last.round_trips == end.stats.verify_rounds == end.stats.round_trips > 0
    assert last.new_tokens == end.stats.new_tokens and end.stats.rtt_ms is None
    assert 1.0 <= last.tau <= 4.0 and len(last.acceptance_by_depth) == 3


def test_stop_strings_end_the_answer_as_they_end_plain_decoding(runner: CountingRunner) -> None:
    reference = ar_tokens(runner, FIRST)
    stop = runner.decode(reference[5:7])
    config = DecodeConfig(24, SamplingConfig(), DraftShape(gamma=3), stop_strings=(stop,))
    engine = LocalChatEngine.of(runner, moa(runner))

    async def scenario() -> Finished:
        await engine.open()
        return finished(await collect(engine, FIRST, config))

    answer = run(scenario)

    assert answer.stop is StopReason.STOP_STRING
    assert list(answer.tokens) == ar_tokens(runner, FIRST, config)
    assert answer.text.endswith(stop)


def test_describe_names_the_local_mode_and_a_stream_before_open_is_refused(runner: CountingRunner) -> None:
    engine = LocalChatEngine.of(runner, None)

    info = engine.describe()

    assert (info.mode, info.draft, info.device, info.verifier) == ("local", "none", "cpu", "this device")
    unloaded = LocalChatEngine(LocalConfig(draft="eagle", device="cpu")).describe()
    assert (unloaded.mode, unloaded.draft, unloaded.target, unloaded.device) == ("local", "eagle", "smollm2", "cpu")
    with pytest.raises(Exception, match="open"):
        run(lambda: collect(engine, FIRST))
    with pytest.raises(ConfigError, match="checkpoint"):
        LocalConfig(draft=None, checkpoint=Path("checkpoints/moa"))
    with pytest.raises(ConfigError, match="unknown linear mode 'fast'"):
        LocalConfig(linear="fast")
