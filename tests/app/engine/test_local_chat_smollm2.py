"""The local engine on the real SmolLM2 with the shipped MoA draft (integration): two turns equal
plain decoding and the second reuses all of the first; cancel keeps the partial answer.
"""

from __future__ import annotations

import pytest
import torch

from app.engine.chat import Message
from app.engine.events import EngineEvent, Shown, TokenGenerated
from app.engine.local_chat import LocalChatEngine
from app.engine.local_models import LocalConfig, load_models
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import Drafter
from drafts.target.chat import common_prefix, format_chat_after, render_chat
from tests.app.engine.test_local_chat import ar_tokens, collect, finished, reply, run
from tests.counting_runner import CountingRunner

REAL = DecodeConfig(max_new_tokens=32)
CHAT: list[Message] = [Message("user", "List three fruits, with a word on each (café style).")]


@pytest.fixture(scope="module")
def smollm2() -> tuple[CountingRunner, Drafter | None]:
    runner, drafter = load_models(LocalConfig(draft="moa", device="cpu"))
    return CountingRunner.of(runner), drafter


@pytest.mark.integration
def test_smollm2_with_moa_answers_two_turns_as_plain_decoding_and_reuses_the_first(
    smollm2: tuple[CountingRunner, Drafter | None],
) -> None:
    runner, drafter = smollm2
    assert runner.linear == ("packed" if torch.backends.mkldnn.is_available() else "dense")  # --local's CPU default
    engine = LocalChatEngine.of(runner, drafter)
    seen: dict[str, object] = {}

    async def scenario() -> tuple[list[EngineEvent], list[EngineEvent], list[Message]]:
        await engine.open()
        first = await collect(engine, CHAT, REAL)
        seen["held"] = list(engine.conversation.tokens)
        second_messages = reply(CHAT, finished(first), "Now three vegetables.")
        runner.calls = []
        second = await collect(engine, second_messages, REAL)
        seen["calls"] = list(runner.calls)
        await engine.close()
        return first, second, second_messages

    first, second, second_messages = run(scenario)

    # The second prompt extends the first prompt and its answer token for token (drafts.target.chat)
    said = render_chat(runner.tokenizer, CHAT).answered(finished(first).tokens, finished(first).text)
    prompt = list(format_chat_after(runner.tokenizer, second_messages, said).tokens)
    assert prompt[: len(said.tokens)] == list(said.tokens)
    for events, tokens in ((first, runner.format_chat(CHAT)), (second, prompt)):
        end, shown = finished(events), Shown()
        for event in events:
            shown.apply(event)
        assert list(end.tokens) == generate_autoregressive(runner, tokens, REAL).tokens
        assert shown.text == end.text and runner.decode(end.tokens).startswith(end.text)
        assert shown.count(TokenSource.DRAFT_ACCEPTED) == end.stats.accepted > 0  # the trained draft helps
    calls, kept = seen["calls"], common_prefix(seen["held"], prompt)  # type: ignore[arg-type]
    assert engine.conversation.reused == kept >= len(said.tokens) - 1  # all of turn 1 but its newest token
    assert calls[0] == len(prompt) - kept  # type: ignore[index]
    assert finished(second).stats.prefill_tokens == len(prompt) - kept


@pytest.mark.integration
@pytest.mark.parametrize("draft", ["moa", "none"])
def test_smollm2_cancelled_keeps_the_partial_answer(smollm2: tuple[CountingRunner, Drafter | None], draft: str) -> None:
    runner, drafter = smollm2
    engine = LocalChatEngine.of(runner, drafter if draft == "moa" else None)
    long = DecodeConfig(max_new_tokens=200)

    async def scenario() -> list[EngineEvent]:
        await engine.open()
        events: list[EngineEvent] = []
        async for event in engine.stream(CHAT, long):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position == 3:
                await engine.cancel()
        return events

    end = finished(run(scenario))

    assert end.stop is StopReason.CANCELLED and 4 <= len(end.tokens) < 40
    assert list(end.tokens) == ar_tokens(runner, CHAT, DecodeConfig(max_new_tokens=40))[: len(end.tokens)]
