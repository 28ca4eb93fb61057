"""Speculative streaming end to end with the real thing: SmolLM2-135M on a moa-server, the shipped MoA
draft on the client, through the link shaper, at T = 0."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from app.engine.client_draft import ClientDraft
from app.engine.draftless import Draftless
from app.engine.events import Finished, LinkLost, StatsUpdated, TokenGenerated
from app.engine.sync import EngineThread
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import DraftShape
from drafts.locations import shipped_checkpoint
from drafts.net import ShaperThread, preset
from drafts.neural.drafter import NeuralDrafter
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import draft_id, load_draft
from server_stub.backend.draft_memory import MemoryCompressor
from tests.app.engine.scenario import Recording, assert_provenance_sums_up, engine_config
from tests.app.engine.servers import ServerThread

pytestmark = pytest.mark.integration

NEW_TOKENS = 48
# A chain deep enough to outlast the steps the server takes while a proposal is drafted and sent
# (its walk: drafts.proposal_match), and a prompt the shipped MoA drafts well, so that drafted
# tokens are accepted on a busy CPU too (the server never waits for a proposal).
SHAPE = DraftShape(gamma=8)
PROMPT = "Count from 1 to 30, separated by commas."


@dataclass
class Setup:
    runner: TargetRunner
    checkpoint: Any
    prompt: list[int]
    expected: list[int]

    def draft(self) -> ClientDraft:
        """A fresh client draft (each engine drafts with its own copy, as on its own machine)."""
        return ClientDraft.of(
            NeuralDrafter(load_draft(self.checkpoint, self.runner)), draft_id(self.checkpoint), self.runner
        )

    def server(self, **options: Any) -> ServerThread:
        return ServerThread(self.runner, MemoryCompressor.load(self.checkpoint, self.runner), **options)


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    checkpoint = shipped_checkpoint(runner.fingerprint.name, "moa")
    prompt = runner.format_chat([{"role": "user", "content": PROMPT}])
    expected = generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=NEW_TOKENS)).tokens
    yield Setup(runner, checkpoint, prompt, expected)


def test_the_stream_equals_ar_and_api_streaming_and_marks_the_drafted_tokens(setup: Setup) -> None:
    decode = DecodeConfig(max_new_tokens=NEW_TOKENS, shape=SHAPE)
    recording = Recording()
    with (
        setup.server() as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as link,
        EngineThread(engine_config(link.port, stream=True), setup.draft()) as engine,
        EngineThread(engine_config(link.port), Draftless.of(setup.runner)) as api,
    ):
        for event in engine.stream(setup.prompt, decode):
            recording.add(event)
        streamed_by_api = api.generate(setup.prompt, decode)

    finished = recording.finished
    assert list(finished.tokens) == setup.expected == list(streamed_by_api.tokens)
    assert_provenance_sums_up(recording)
    drafted = [e for e in recording.of(TokenGenerated) if e.source is TokenSource.DRAFT_ACCEPTED]
    stats = finished.stats
    assert drafted and len(drafted) == stats.accepted
    assert stats.verify_rounds < stats.new_tokens  # tau > 1: server steps that took drafted tokens
    assert stats.round_trips <= 3 and recording.of(StatsUpdated)[-1].shape == "stream chain 8"
    print(
        f"\nSmolLM2 + MoA stream over lan: {stats.new_tokens} tokens, {stats.verify_rounds} server steps "
        f"(tau {stats.new_tokens / stats.verify_rounds:.2f}), {stats.accepted} drafted, "
        f"{stats.tokens_per_s:.1f} tok/s vs API streaming {streamed_by_api.stats.tokens_per_s:.1f}"
    )


def test_a_stream_led_for_two_late_steps_over_4g_equals_ar(setup: Setup) -> None:
    decode = DecodeConfig(max_new_tokens=NEW_TOKENS, shape=SHAPE)
    with (
        setup.server() as server,
        ShaperThread(upstream_port=server.port, profile=preset("4g")) as link,
        EngineThread(engine_config(link.port, stream=True, stream_lag=2, stream_width=4), setup.draft()) as engine,
    ):
        finished = engine.generate(setup.prompt, decode)

    assert list(finished.tokens) == setup.expected
    proposals = finished.stats.proposals
    assert proposals is not None and proposals.proposals > 0 and proposals.led == 2 * proposals.proposals
    assert proposals.nodes_sent == 4 * 9 * proposals.proposals  # the top 4 pairs, chains 8 + 1 deep


def test_a_cancel_mid_stream_keeps_what_was_shown(setup: Setup) -> None:
    events: list[Any] = []
    with (
        setup.server() as server,
        EngineThread(engine_config(server.port, stream=True), setup.draft()) as engine,
    ):
        for event in engine.stream(setup.prompt, DecodeConfig(max_new_tokens=NEW_TOKENS, shape=SHAPE)):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position == 5:
                engine.cancel()

    cancelled = events[-1]
    assert isinstance(cancelled, Finished) and cancelled.stop is StopReason.CANCELLED
    assert 6 <= len(cancelled.tokens) < NEW_TOKENS
    assert list(cancelled.tokens) == setup.expected[: len(cancelled.tokens)]


def test_a_link_lost_mid_stream_is_bridged_by_the_rounds_and_the_answer_is_the_targets(setup: Setup) -> None:
    cut = threading.Event()
    recording = Recording()
    with (
        setup.server(resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as link,
        EngineThread(engine_config(link.port, stream=True), setup.draft()) as engine,
    ):
        for event in engine.stream(setup.prompt, DecodeConfig(max_new_tokens=NEW_TOKENS, shape=SHAPE)):
            recording.add(event)
            if isinstance(event, TokenGenerated) and event.position >= 8 and not cut.is_set():
                cut.set()
                link.set_profile(preset("offline"))
                threading.Timer(0.8, lambda: link.set_profile(preset("lan"))).start()

    finished = recording.finished
    assert cut.is_set() and recording.of(LinkLost)
    assert list(finished.tokens) == setup.expected
    assert_provenance_sums_up(recording)
