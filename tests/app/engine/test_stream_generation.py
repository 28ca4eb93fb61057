"""Speculative streaming (issue 12) against a real moa-server on 127.0.0.1, through the link shaper, at T = 0.

The tiny target steps in a millisecond or two, so a proposal reaches the server only if the answer
is long enough to still be running: the tests that look for drafted tokens ask for LONG answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from app.engine.events import Finished, LinkLost, StatsUpdated, TokenGenerated
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import DraftShape
from drafts.net import ShaperThread, preset
from server_stub.backend.base import VerifyJob, VerifyOutcome
from server_stub.backend.transformers_backend import TransformersBackend
from server_stub.cli import backend_config
from server_stub.errors import ServerError
from tests.app.engine.scenario import (
    PROMPT,
    SERVER_RUNNER,
    Recording,
    assert_provenance_sums_up,
    client_draft,
    engine_config,
    moa_compressor,
    reference,
)
from tests.app.engine.servers import ServerThread

NEW_TOKENS = 30
LONG = 200  # long enough that the server is still decoding when the first proposals arrive
STEP_S = 0.05  # a paced server's step (PacedBackend)


def stream_config(port: int, **options: Any) -> Any:
    return engine_config(port, stream=True, **options)


def record(engine: EngineThread, decode: DecodeConfig, at_token: Any = None) -> Recording:
    recording = Recording()
    for event in engine.stream(PROMPT, decode):
        recording.add(event)
        if at_token is not None and isinstance(event, TokenGenerated):
            at_token(event.position)
    return recording


def proposing_server(**options: Any) -> ServerThread:
    return ServerThread(SERVER_RUNNER, moa_compressor(), **options)


class PacedBackend(TransformersBackend):
    """The tiny target at a real target's pace: a step takes at least STEP_S (SmolLM2's on a CPU core),
    so the draft, as slow as the target here, has time to propose before the answer is over."""

    def verify(self, jobs: Sequence[VerifyJob]) -> list[VerifyOutcome | ServerError]:
        started = time.perf_counter()
        outcomes = super().verify(jobs)
        time.sleep(max(0.0, STEP_S - (time.perf_counter() - started)))
        return outcomes


def paced_server() -> ServerThread:
    server = proposing_server()
    server.backend = PacedBackend(SERVER_RUNNER, backend_config(server.config), moa_compressor())
    return server


@pytest.mark.parametrize("kind", ["moa", "eagle"])
def test_a_greedy_stream_equals_the_targets_own_output(kind: str) -> None:
    with (
        proposing_server() as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as link,
        EngineThread(stream_config(link.port), client_draft(kind)) as engine,
    ):
        recording = record(engine, DecodeConfig(max_new_tokens=NEW_TOKENS))

    finished = recording.finished
    assert list(finished.tokens) == reference(NEW_TOKENS)
    assert_provenance_sums_up(recording)
    assert finished.stop is StopReason.MAX_TOKENS


def test_a_perfect_draft_gets_its_proposals_accepted_and_they_are_marked_as_drafted() -> None:
    with (
        paced_server() as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as link,
        EngineThread(stream_config(link.port, stream_width=1), client_draft("target")) as engine,  # chains only
    ):
        recording = record(engine, DecodeConfig(max_new_tokens=LONG, shape=DraftShape(gamma=8)))

    finished = recording.finished
    assert list(finished.tokens) == reference(LONG)
    assert_provenance_sums_up(recording)
    stats = finished.stats
    drafted = [e for e in recording.of(TokenGenerated) if e.source is TokenSource.DRAFT_ACCEPTED]
    assert len(drafted) == stats.accepted > 0  # drafted here, accepted by the server, shown as such
    assert stats.verify_rounds < 0.75 * stats.new_tokens  # tau > 4/3 even on a busy core (~3 on a quiet one)
    # the prompt (with the first token), its vectors fetched beside the Generate, one Generate for the rest
    assert stats.round_trips == 3
    last = recording.of(StatsUpdated)[-1]
    assert last.shape == "stream chain 8" and last.drafted_share == stats.accepted / stats.new_tokens
    proposals = stats.proposals  # the proposer's figures: one step per part (the start's Verify is no part)
    assert proposals is not None and proposals.accepted == stats.accepted
    assert stats.verify_rounds - 1 <= proposals.steps < stats.verify_rounds
    assert proposals.proposals > 0 and proposals.steps_applied > 0 and proposals.nodes_sent >= 8 * proposals.proposals


def test_proposals_drafted_with_a_lead_stream_the_same_output_and_are_that_much_deeper() -> None:
    with (
        paced_server() as server,
        ShaperThread(upstream_port=server.port, profile=preset("4g")) as link,
        EngineThread(
            stream_config(link.port, stream_lead=3, stream_width=1, stream_lag=1), client_draft("moa")
        ) as engine,  # one step late assumed: the lead alone makes the chain deeper
    ):
        finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=LONG, shape=DraftShape(gamma=2)))

    assert list(finished.tokens) == reference(LONG)
    proposals = finished.stats.proposals
    assert proposals is not None and proposals.proposals > 0
    assert proposals.nodes_sent == 5 * proposals.proposals  # a chain of 2 + 3


def test_a_chain_shape_proposes_a_fan_of_chains_and_streams_the_same_output() -> None:
    with (
        paced_server() as server,
        ShaperThread(upstream_port=server.port, profile=preset("4g")) as link,
        EngineThread(stream_config(link.port, stream_width=3, stream_lag=1), client_draft("moa")) as engine,
    ):
        recording = record(engine, DecodeConfig(max_new_tokens=LONG, shape=DraftShape(gamma=2)))

    finished = recording.finished
    assert list(finished.tokens) == reference(LONG)
    assert_provenance_sums_up(recording)
    proposals = finished.stats.proposals
    assert proposals is not None and proposals.proposals > 0
    assert proposals.nodes_sent == 3 * 2 * proposals.proposals  # the top 3 guesses, a chain of 2 each
    assert recording.of(StatsUpdated)[-1].shape == "stream chain 2 x3"


def test_a_fan_led_by_a_lag_of_two_covers_pairs_of_guesses_and_streams_the_same_output() -> None:
    with (
        paced_server() as server,
        ShaperThread(upstream_port=server.port, profile=preset("4g")) as link,
        EngineThread(stream_config(link.port, stream_width=3, stream_lag=2), client_draft("moa")) as engine,
    ):
        recording = record(engine, DecodeConfig(max_new_tokens=LONG, shape=DraftShape(gamma=2)))

    finished = recording.finished
    assert list(finished.tokens) == reference(LONG)
    assert_provenance_sums_up(recording)
    proposals = finished.stats.proposals
    assert proposals is not None and proposals.proposals > 0 and proposals.led == 2 * proposals.proposals
    assert proposals.nodes_sent == 3 * 3 * proposals.proposals  # the top 3 pairs, a chain of 2 below the first token


def test_tree_proposals_stream_the_same_output() -> None:
    with (
        proposing_server() as server,
        EngineThread(stream_config(server.port), client_draft("eagle")) as engine,
    ):
        finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=LONG, shape=DraftShape.parse_tree("4,4,16")))

    assert list(finished.tokens) == reference(LONG)
    assert finished.stats.mean_gamma > 0  # trees were proposed (drafted depth sent per server step)


def test_a_cancel_mid_stream_ends_it_at_once_and_the_next_message_is_the_targets() -> None:
    with (
        proposing_server() as server,
        ShaperThread(upstream_port=server.port, profile=preset("4g")) as link,
        EngineThread(stream_config(link.port), client_draft("moa")) as engine,
    ):
        events = []
        for event in engine.stream(PROMPT, DecodeConfig(max_new_tokens=LONG)):
            events.append(event)
            if isinstance(event, TokenGenerated) and event.position == 3:
                engine.cancel()
        again = engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS))

    cancelled = events[-1]
    assert isinstance(cancelled, Finished) and cancelled.stop is StopReason.CANCELLED
    assert 4 <= len(cancelled.tokens) < LONG and list(cancelled.tokens) == reference(LONG)[: len(cancelled.tokens)]
    assert list(again.tokens) == reference(NEW_TOKENS)


def test_a_stop_string_ends_the_stream_there() -> None:
    text = SERVER_RUNNER.decode(reference(NEW_TOKENS))
    stop = text[10:13]
    with (
        proposing_server() as server,
        EngineThread(stream_config(server.port), client_draft("moa")) as engine,
    ):
        finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=LONG, stop_strings=(stop,)))

    assert finished.stop is StopReason.STOP_STRING
    assert finished.text.endswith(stop) and text.startswith(finished.text)


def test_a_server_without_proposals_gets_rounds_and_the_same_output() -> None:
    with (
        proposing_server(propose=False) as server,  # moa-server --no-propose: Capabilities.propose False
        EngineThread(stream_config(server.port), client_draft("target")) as engine,
    ):
        recording = record(engine, DecodeConfig(max_new_tokens=NEW_TOKENS, shape=DraftShape(gamma=4)))

    finished = recording.finished
    assert list(finished.tokens) == reference(NEW_TOKENS)
    assert_provenance_sums_up(recording)
    shape = [e.shape for e in recording.of(StatsUpdated)][-1]
    assert not shape.startswith("stream") and finished.stats.round_trips > 3  # a round trip per chain


def test_a_link_lost_mid_stream_hands_the_rest_to_the_rounds_and_the_output_is_the_targets() -> None:
    cut = threading.Event()
    with (
        proposing_server(resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=preset("wifi")) as link,
        EngineThread(stream_config(link.port), client_draft("moa")) as engine,
    ):

        def at_token(position: int) -> None:
            if position >= 5 and not cut.is_set():
                cut.set()
                link.set_profile(preset("offline"))
                threading.Timer(0.8, lambda: link.set_profile(preset("wifi"))).start()

        recording = record(engine, DecodeConfig(max_new_tokens=LONG), at_token)

    finished = recording.finished
    assert cut.is_set() and recording.of(LinkLost)
    assert list(finished.tokens) == reference(LONG)  # the repair made every offline token the target's
    assert_provenance_sums_up(recording)
