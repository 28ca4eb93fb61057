"""API streaming (no draft: the server decodes alone) against a real moa-server on 127.0.0.1, at T = 0."""

from __future__ import annotations

import threading
import time

import pytest

from app.engine.draftless import Draftless
from app.engine.errors import VerifierUnavailableError
from app.engine.events import LinkLost, LinkRestored, TokenGenerated
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason
from drafts.net import ShaperThread, preset
from tests.app.engine.scenario import CLIENT_RUNNER, PROMPT, SERVER_RUNNER, Recording, engine_config, reference
from tests.app.engine.servers import ServerThread

NEW_TOKENS = 24


def stream(engine: EngineThread, decode: DecodeConfig, on_token: object = None) -> Recording:
    recording = Recording()
    for event in engine.stream(PROMPT, decode):
        recording.add(event)
        if callable(on_token) and isinstance(event, TokenGenerated):
            on_token(event.position)
    return recording


def test_the_server_streams_the_targets_own_greedy_output_token_by_token() -> None:
    with (
        ServerThread(SERVER_RUNNER) as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as link,
        EngineThread(engine_config(link.port), Draftless.of(CLIENT_RUNNER)) as engine,
    ):
        recording = stream(engine, DecodeConfig(max_new_tokens=NEW_TOKENS))

    finished = recording.finished
    assert list(finished.tokens) == reference(NEW_TOKENS)
    tokens = recording.of(TokenGenerated)
    assert [t.position for t in tokens] == list(range(NEW_TOKENS))
    assert {t.source for t in tokens} == {TokenSource.TARGET}
    stats = finished.stats
    assert stats.round_trips == 2  # the prompt's prefill, then one Generate for the whole output
    assert stats.verify_rounds == NEW_TOKENS  # one target forward per token
    assert stats.bytes_up < 1000 < stats.bytes_down  # one small request up, a frame per token down
    assert finished.stop is StopReason.MAX_TOKENS and stats.ttft_s is not None


def test_a_second_generation_on_the_same_connection_starts_afresh() -> None:
    with (
        ServerThread(SERVER_RUNNER) as server,
        EngineThread(engine_config(server.port), Draftless.of(CLIENT_RUNNER)) as engine,
    ):
        first = engine.generate(PROMPT, DecodeConfig(max_new_tokens=8))
        second = engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS))

    assert list(first.tokens) == reference(8) and list(second.tokens) == reference(NEW_TOKENS)


def test_a_cut_link_pauses_the_stream_and_it_resumes_where_it_stopped() -> None:
    cut = threading.Event()
    with (
        ServerThread(SERVER_RUNNER, resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=preset("wifi")) as link,
        EngineThread(engine_config(link.port), Draftless.of(CLIENT_RUNNER)) as engine,
    ):

        def at_token(position: int) -> None:
            if position >= 5 and not cut.is_set():
                cut.set()
                link.set_profile(preset("offline"))
                threading.Timer(0.5, lambda: link.set_profile(preset("wifi"))).start()

        recording = stream(engine, DecodeConfig(max_new_tokens=NEW_TOKENS), at_token)

    assert cut.is_set() and list(recording.finished.tokens) == reference(NEW_TOKENS)
    assert recording.of(LinkLost) and recording.of(LinkRestored)
    assert recording.finished.stats.offline_tokens == 0  # nothing is written without the server


def test_a_stop_token_ends_the_stream_on_the_server() -> None:
    target = reference(NEW_TOKENS)
    stop = target[6]
    client = Draftless.of(CLIENT_RUNNER)
    client = Draftless(client.target, frozenset({stop}), client.decode)
    with (
        ServerThread(SERVER_RUNNER) as server,
        EngineThread(engine_config(server.port), client) as engine,
    ):
        finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS))

    assert list(finished.tokens) == target[: target.index(stop)]  # the stop token ends it, unshown
    assert finished.stop is StopReason.EOS


def test_with_the_link_down_a_first_message_fails_at_once_and_the_next_one_is_answered_once_it_is_back() -> None:
    with (
        ServerThread(SERVER_RUNNER) as server,
        ShaperThread(upstream_port=server.port, profile=preset("offline")) as link,
        EngineThread(engine_config(link.port, connect_timeout_s=30.0), Draftless.of(CLIENT_RUNNER)) as engine,
    ):
        started = time.perf_counter()
        with pytest.raises(VerifierUnavailableError, match="start moa-server") as failed:
            engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS))
        took = time.perf_counter() - started
        link.set_profile(preset("lan"))
        finished = engine.generate(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS))

    # one connection attempt (open_timeout_s = 2 s), not the 30 s reconnect deadline
    assert took < 2.0 + 3.0 and "--api" in str(failed.value)
    assert list(finished.tokens) == reference(NEW_TOKENS)
