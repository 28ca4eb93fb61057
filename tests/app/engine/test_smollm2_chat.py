"""The chat engine with the real thing: SmolLM2-135M-Instruct on a moa-server, the shipped MoA draft
on the client, the link shaper on ``lan``. Three turns (each sending only its new tokens), the third
sent while the link is down (answered offline, repaired), all equal to plain greedy decoding. The
link comes back at the first offline token: a draft may end its offline answer after any number of
tokens, but never before the first (:func:`app.engine.spell.first_token_bans`)."""

from __future__ import annotations

import asyncio

import pytest
import torch

from app.engine.client_draft import ClientDraft
from app.engine.events import EngineEvent, Finished, LinkLost, LinkState, Repaired, StatsUpdated, TokenGenerated
from app.engine.remote_chat import RemoteChatEngine
from drafts.data.conversations import Turn
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason
from drafts.locations import shipped_checkpoint
from drafts.net import ShaperThread, preset
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from drafts.target.chat import format_chat_after
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import draft_id, load_draft
from server_stub.backend.draft_memory import MemoryCompressor
from tests.app.engine.scenario import engine_config
from tests.app.engine.servers import ServerThread

pytestmark = pytest.mark.integration

NEW = 24
USERS = ["Name three colours.", "Which one is the sky?", "Say it in French."]


def test_smollm2_chat_reuses_each_turn_and_repairs_a_turn_started_offline() -> None:
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    checkpoint = shipped_checkpoint(runner.fingerprint.name, "moa")
    draft = ClientDraft.of(NeuralDrafter(load_draft(checkpoint, runner)), draft_id(checkpoint), runner)
    decode = DecodeConfig(max_new_tokens=NEW)

    async def chat(shaper: ShaperThread) -> tuple[list[list[Turn]], list[Finished], list[EngineEvent]]:
        engine = RemoteChatEngine(engine_config(shaper.port), draft)
        await engine.open()
        messages: list[Turn] = []
        conversations, answers, last = [], [], []
        for k, text in enumerate(USERS):
            messages.append(Turn("user", text))
            if k == len(USERS) - 1:  # the last message is sent with the link down
                shaper.set_profile(preset("offline"))
                while engine.state not in (LinkState.OFFLINE, LinkState.RECONNECTING):
                    await asyncio.sleep(0.02)
            events = []
            async for event in engine.stream(messages, decode):
                events.append(event)
                if isinstance(event, TokenGenerated) and event.source is TokenSource.OFFLINE and event.position == 0:
                    shaper.set_profile(preset("lan"))  # the draft writes on while the session reconnects
            finished = events[-1]
            assert isinstance(finished, Finished)
            conversations.append(list(messages))
            answers.append(finished)
            last = events
            messages.append(Turn("assistant", finished.text))
        await engine.close()
        return conversations, answers, last

    with (
        ServerThread(runner, MemoryCompressor.load(checkpoint, runner), resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as shaper,
    ):
        conversations, answers, last = asyncio.run(asyncio.wait_for(chat(shaper), 300))

    prompts, said = [], None  # each turn as the engine renders it: the last answer's tokens kept
    for conversation, finished in zip(conversations, answers, strict=True):
        rendered = format_chat_after(runner.tokenizer, conversation, said)
        prompts.append(list(rendered.tokens))
        said = rendered.answered(finished.tokens, finished.text)
    for prompt, finished in zip(prompts, answers, strict=True):
        assert list(finished.tokens) == generate_autoregressive(runner, prompt, decode).tokens
        assert finished.text == runner.decode(finished.tokens)
    for k in (1, 2):  # only what follows the last prompt (its answer's end and the new message)
        held = len(prompts[k - 1]) + len(answers[k - 1].tokens) - (answers[k - 1].stop is not StopReason.EOS)
        assert answers[k].stats.prefill_tokens == len(prompts[k]) - 1 - held  # the verifier held the rest
    assert any(isinstance(e, TokenGenerated) and e.source is TokenSource.OFFLINE for e in last)
    assert any(isinstance(e, Repaired) for e in last) and answers[-1].stats.unverified == 0
    print(
        "\nSmolLM2 chat over lan: prompt tokens sent per turn "
        f"{[a.stats.prefill_tokens for a in answers]} of {[len(p) - 1 for p in prompts]}; "
        f"ttft {[round(a.stats.ttft_s or 0, 3) for a in answers]} s; third turn offline tokens "
        f"{answers[-1].stats.offline_tokens}, kept {answers[-1].stats.kept_after_repair}"
    )


def test_smollm2_sampled_over_a_3g_link_never_loses_the_link() -> None:
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    checkpoint = shipped_checkpoint(runner.fingerprint.name, "moa")
    draft = ClientDraft.of(NeuralDrafter(load_draft(checkpoint, runner)), draft_id(checkpoint), runner)
    sampled = DecodeConfig(max_new_tokens=32, sampling=SamplingConfig(temperature=1.0, seed=1))

    async def chat(port: int) -> list[EngineEvent]:
        engine = RemoteChatEngine(engine_config(port), draft)
        await engine.open()
        events = [e async for e in engine.stream([Turn("user", USERS[0])], sampled)]
        await engine.close()
        return events

    with (
        ServerThread(runner, MemoryCompressor.load(checkpoint, runner)) as server,
        ShaperThread(upstream_port=server.port, profile=preset("3g")) as shaper,
    ):
        events = asyncio.run(asyncio.wait_for(chat(shaper.port), 300))

    finished = events[-1]
    assert isinstance(finished, Finished) and finished.stop is not None and finished.stats.unverified == 0
    assert not [e for e in events if isinstance(e, LinkLost)]
    assert finished.stats.bytes_up / finished.stats.new_tokens < 4 * runner.config.vocab_size  # no dense q


def test_smollm2_remote_default_is_the_cpu_verifiers_tree_and_a_chain_asked_caps_the_pacer() -> None:
    from app.settings import Settings
    from drafts.target.default_shape import verifier_shape

    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    checkpoint = shipped_checkpoint(runner.fingerprint.name, "moa")
    draft = ClientDraft.of(NeuralDrafter(load_draft(checkpoint, runner)), draft_id(checkpoint), runner)
    default = Settings(mode="remote", temperature=0.0, max_tokens=NEW)  # chain = 0, no tree: the default
    asked = default.replace(chain=2)

    async def answer(port: int, settings: Settings) -> tuple[list[EngineEvent], str | None]:
        engine = RemoteChatEngine(engine_config(port), draft)
        await engine.open()
        events = [e async for e in engine.stream([Turn("user", USERS[0])], settings.decode_config())]
        device_kind = engine.engine.session.capabilities.device_kind  # what the server's Welcome said
        await engine.close()
        return events, device_kind

    with (
        ServerThread(runner, MemoryCompressor.load(checkpoint, runner)) as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as shaper,
    ):
        default_events, device_kind = asyncio.run(asyncio.wait_for(answer(shaper.port, default), 300))
        asked_events, _ = asyncio.run(asyncio.wait_for(answer(shaper.port, asked), 300))

    prompt = list(format_chat_after(runner.tokenizer, [Turn("user", USERS[0])], None).tokens)
    expected = generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=NEW)).tokens
    for events in (default_events, asked_events):
        finished = events[-1]
        assert isinstance(finished, Finished) and list(finished.tokens) == expected  # identical to ar at T=0
        assert finished.stats.unverified == 0 and finished.stats.verify_rounds < len(expected)
    assert device_kind == "cpu"
    [default_stats] = [e for e in default_events if isinstance(e, StatsUpdated)][-1:]
    [asked_stats] = [e for e in asked_events if isinstance(e, StatsUpdated)][-1:]
    assert default_stats.shape == verifier_shape("cpu").describe() == "tree 4,4,16"
    assert asked_stats.shape == "paced chain <= 2" and len(asked_stats.acceptance_by_depth) <= 2
    print(
        f"\nSmolLM2 remote over lan, {NEW} tokens: default {default_stats.shape} "
        f"{default_stats.round_trips_per_100:.1f} round trips per 100 tokens; "
        f"{asked_stats.shape} {asked_stats.round_trips_per_100:.1f}"
    )
