"""The remote engine against a real moa-server on 127.0.0.1, through the link shaper, at T = 0."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest

from app.engine.client_draft import ClientDraft
from app.engine.errors import VerifierRefusedError, VerifierUnavailableError
from app.engine.events import Finished, StatsUpdated, TokenGenerated
from app.engine.remote import RemoteEngine
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import DraftShape
from drafts.errors import ErrorCode
from drafts.net import LinkProfile, ShaperThread, preset
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.factory import default_config
from drafts.sampling import SamplingConfig
from drafts.target.default_shape import VERIFIER_DEFAULT, verifier_shape
from tests.app.engine.scenario import (
    CLIENT_RUNNER,
    PROMPT,
    SERVER_RUNNER,
    Recording,
    assert_provenance_sums_up,
    client_draft,
    engine_config,
    moa_compressor,
    reference,
)
from tests.app.engine.servers import ServerThread, free_port
from tests.tiny_drafts import random_draft

NEW_TOKENS = 30


@pytest.mark.parametrize("kind", ["moa", "eagle", "independent", "target"])
def test_a_greedy_generation_equals_the_targets_own(kind: str) -> None:
    recording = Recording()
    with (
        ServerThread(SERVER_RUNNER, moa_compressor()) as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as link,
        EngineThread(engine_config(link.port), client_draft(kind)) as engine,
    ):
        for event in engine.stream(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS)):
            recording.add(event)

    finished = recording.finished
    assert list(finished.tokens) == reference(NEW_TOKENS)
    assert_provenance_sums_up(recording)
    assert finished.stats.bytes_up > 0 and finished.stats.bytes_down > 0 and finished.stats.ttft_s is not None


def test_a_perfect_draft_sends_the_chains_it_drafted_while_the_last_one_was_verified() -> None:
    far = LinkProfile("far", latency_ms=50)  # 100 ms round trips: time to draft a whole chain ahead
    with (
        ServerThread(SERVER_RUNNER) as server,
        ShaperThread(upstream_port=server.port, profile=far) as link,
        EngineThread(engine_config(link.port, gamma_max=8), client_draft("target")) as engine,
    ):  # a chain of 8 asked: the pacer may go that long
        finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS, shape=DraftShape(gamma=8)))

    assert list(finished.tokens) == reference(NEW_TOKENS)
    stats = finished.stats
    assert stats.accepted > stats.target and stats.verify_rounds <= NEW_TOKENS // 4
    drafted_rounds = stats.verify_rounds - 1  # the first verifies the root alone, behind the prompt
    assert stats.drafted_ahead >= 1 and stats.mean_gamma * stats.verify_rounds > 4 * drafted_rounds


def test_the_default_shape_is_the_tree_for_the_verifiers_device() -> None:
    with (
        ServerThread(SERVER_RUNNER, moa_compressor()) as server,  # a CPU verifier: its Welcome says "cpu"
        EngineThread(engine_config(server.port), client_draft("moa")) as engine,
    ):
        events = list(engine.stream(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS, shape=VERIFIER_DEFAULT)))

    finished, [*_, stats] = events[-1], [e for e in events if isinstance(e, StatsUpdated)]
    assert isinstance(finished, Finished) and list(finished.tokens) == reference(NEW_TOKENS)
    assert stats.shape == verifier_shape("cpu").describe() == "tree 4,4,16"


def test_a_chain_asked_caps_the_pacer() -> None:
    far = LinkProfile("far", latency_ms=50)  # a perfect draft over 100 ms round trips: the pacer would go to 8
    with (
        ServerThread(SERVER_RUNNER) as server,
        ShaperThread(upstream_port=server.port, profile=far) as link,
        EngineThread(engine_config(link.port, gamma_max=8), client_draft("target")) as engine,
    ):
        finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS, shape=DraftShape(gamma=2)))

    assert list(finished.tokens) == reference(NEW_TOKENS)
    stats = finished.stats
    assert stats.accepted > stats.target and 1 < stats.mean_gamma <= 2  # never longer than asked


def test_a_moa_draft_falls_back_to_the_raw_kv_when_the_server_cannot_compress_it() -> None:
    async def scenario(port: int) -> tuple[Finished, bool]:
        async with RemoteEngine(engine_config(port), client_draft("moa")) as engine:
            finished = await engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS))
            assert engine._session is not None
            return finished, engine._session.compressed

    with ServerThread(SERVER_RUNNER) as server:  # no MoA checkpoint loaded
        finished, compressed = asyncio.run(asyncio.wait_for(scenario(server.port), 60))

    assert list(finished.tokens) == reference(NEW_TOKENS) and not compressed


def test_memory_vectors_cost_fewer_bytes_down_than_the_raw_kv() -> None:
    def bytes_down(compressor: bool) -> int:
        with (
            ServerThread(SERVER_RUNNER, moa_compressor() if compressor else None) as server,
            EngineThread(engine_config(server.port), client_draft("moa")) as engine,
        ):
            return engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS)).stats.bytes_down

    assert bytes_down(compressor=True) < bytes_down(compressor=False)


def test_a_session_evicted_by_the_server_is_replayed_and_the_output_is_unchanged() -> None:
    recording = Recording()
    with (
        ServerThread(SERVER_RUNNER, moa_compressor()) as server,
        ShaperThread(upstream_port=server.port, profile=preset("wifi")) as link,
        EngineThread(engine_config(link.port), client_draft("moa")) as engine,
    ):
        for event in engine.stream(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS)):
            recording.add(event)
            if isinstance(event, TokenGenerated) and event.position == 5:
                server.evict_sessions()

    assert list(recording.finished.tokens) == reference(NEW_TOKENS)
    assert_provenance_sums_up(recording)


def test_at_a_temperature_the_output_is_sampled_to_the_requested_length() -> None:
    decode = DecodeConfig(max_new_tokens=NEW_TOKENS, sampling=SamplingConfig(temperature=0.8, seed=7))
    with (
        ServerThread(SERVER_RUNNER, moa_compressor()) as server,
        EngineThread(engine_config(server.port), client_draft("target")) as engine,
    ):
        finished = engine.generate(PROMPT, decode)

    assert len(finished.tokens) == NEW_TOKENS and finished.stop is StopReason.MAX_TOKENS
    assert finished.stats.accepted > 0  # the target as its own draft is accepted often at T > 0 too


def test_a_draft_for_another_target_is_refused_with_what_to_change() -> None:
    draft = client_draft("eagle")
    other = dataclasses.replace(draft, target=dataclasses.replace(draft.target, name="SmolLM2-135M-Instruct"))
    with (
        ServerThread(SERVER_RUNNER) as server,
        EngineThread(engine_config(server.port), other) as engine,
        pytest.raises(VerifierRefusedError) as refused,
    ):
        engine.generate(PROMPT)

    assert refused.value.code is ErrorCode.TARGET_MISMATCH and "moa-server --target" in str(refused.value)


def test_without_a_server_a_first_message_that_nothing_could_answer_fails_at_once() -> None:
    config = engine_config(free_port(), connect_timeout_s=30.0)  # no waiting for it: nothing could write
    with EngineThread(config, client_draft("independent")) as engine:
        started = time.perf_counter()
        with pytest.raises(VerifierUnavailableError, match="start moa-server") as failed:
            engine.generate(PROMPT)
        took = time.perf_counter() - started
        with pytest.raises(VerifierUnavailableError):  # and again: the next message tries again, fails again
            engine.generate(PROMPT)

    assert took < 3.0 and "--offline-model" in str(failed.value)


def test_a_server_with_a_token_refuses_a_client_without_it_and_serves_one_with_it(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("correct-horse-battery-staple-42\n")
    with ServerThread(SERVER_RUNNER, token_file=token_file) as server:
        with (
            EngineThread(engine_config(server.port), client_draft("independent")) as engine,
            pytest.raises(VerifierRefusedError) as refused,
        ):
            engine.generate(PROMPT)
        config = engine_config(server.port, token="correct-horse-battery-staple-42")
        with EngineThread(config, client_draft("independent")) as engine:
            finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=8))

    assert refused.value.code is ErrorCode.UNAUTHORIZED and "token" in str(refused.value)
    assert list(finished.tokens) == reference(8)


def test_a_generation_abandoned_midway_leaves_the_engine_ready_for_the_next() -> None:
    with (
        ServerThread(SERVER_RUNNER, moa_compressor()) as server,
        ShaperThread(upstream_port=server.port, profile=preset("wifi")) as link,
        EngineThread(engine_config(link.port), client_draft("moa")) as engine,
    ):
        for event in engine.stream(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS)):
            if isinstance(event, TokenGenerated) and event.position == 5:
                break  # the user pressed stop
        finished = engine.generate(PROMPT[:8], DecodeConfig(max_new_tokens=NEW_TOKENS))

    assert list(finished.tokens) == reference(NEW_TOKENS, PROMPT[:8])


def test_a_moa_draft_with_target_layer_inference_asks_for_the_raw_kv_and_stays_lossless() -> None:
    tli = random_draft("moa", CLIENT_RUNNER, seed=1, config=default_config("moa", CLIENT_RUNNER, tli_layers=1))
    draft = ClientDraft.of(NeuralDrafter(tli), "moa-tli1-tiny-test", CLIENT_RUNNER)
    assert not draft.wants_memory
    with (
        ServerThread(SERVER_RUNNER, moa_compressor()) as server,
        EngineThread(engine_config(server.port), draft) as engine,
    ):
        finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS))

    assert list(finished.tokens) == reference(NEW_TOKENS)
