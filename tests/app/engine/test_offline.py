"""Offline continuation against a real moa-server: the link cut and restored, the server restarted,
a silent link, a verifier that never comes back. At T = 0 the output is always the target's own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from app.engine.events import LinkLost, LinkRestored, Reconnecting, Repaired, TokenGenerated
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.net import LinkProfile, ShaperThread, preset
from drafts.target.default_shape import VERIFIER_DEFAULT
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
from tests.app.engine.servers import ServerThread, free_port

NEW_TOKENS = 40
CUT_AT = 6  # output position after which the link goes
WIFI = preset("wifi")  # 10 ms RTT: slow enough that the cut lands mid-generation


def generate(
    engine: EngineThread, at_token: Callable[[int], None] | None = None, shape: DraftShape | None = None
) -> Recording:
    """One generation; ``at_token(position)`` is called on each token shown (from the consumer's thread)."""
    recording = Recording()
    for event in engine.stream(PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS, shape=shape or DraftShape())):
        recording.add(event)
        if at_token is not None and isinstance(event, TokenGenerated):
            at_token(event.position)
    return recording


def once(action: Callable[[], None]) -> Callable[[int], None]:
    """At the first token at or after CUT_AT, run ``action``."""
    done = threading.Event()

    def at_token(position: int) -> None:
        if position >= CUT_AT and not done.is_set():
            done.set()
            action()

    return at_token


def later(seconds: float, action: Callable[[], None]) -> None:
    threading.Timer(seconds, action).start()


@pytest.mark.parametrize(
    ("kind", "shape"),
    [("moa", DraftShape()), ("target", DraftShape()), ("moa", VERIFIER_DEFAULT)],  # the last: the default tree
)
def test_a_cut_link_is_bridged_offline_and_repaired_to_the_targets_own_output(kind: str, shape: DraftShape) -> None:
    cut: dict[str, float] = {}
    with (
        ServerThread(SERVER_RUNNER, moa_compressor(), resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=WIFI) as link,
        EngineThread(engine_config(link.port), client_draft(kind)) as engine,
    ):

        def go_offline() -> None:
            link.set_profile(preset("offline"))
            cut["at"] = time.perf_counter()
            later(0.6, lambda: link.set_profile(WIFI))

        recording = generate(engine, once(go_offline), shape)

    assert list(recording.finished.tokens) == reference(NEW_TOKENS)
    assert_provenance_sums_up(recording)
    lost_at, _ = recording.first(LinkLost)
    assert lost_at - cut["at"] < 0.5  # a reset is noticed at once
    offline = recording.offline_times()
    assert offline, "the generation went on offline"
    assert max(b - a for a, b in zip([lost_at, *offline], offline, strict=False)) < 0.5  # never a pause > 0.5 s
    (restored,) = recording.of(LinkRestored)
    assert restored.resumed and restored.replayed == 0
    repaired = recording.of(Repaired)
    stats = recording.finished.stats
    assert repaired and repaired[0].start >= CUT_AT and stats.offline_tokens == sum(r.end - r.start for r in repaired)
    assert stats.kept_after_repair == sum(r.kept for r in repaired)
    if kind == "target":  # a perfect draft's offline tokens all survive
        assert all(r.replaced == 0 for r in repaired) and stats.kept_after_repair == stats.offline_tokens


def test_a_restarted_server_gets_a_new_session_with_the_history_replayed() -> None:
    port = free_port()
    servers = [ServerThread(SERVER_RUNNER, moa_compressor(), port=port).start()]
    try:
        with (
            ShaperThread(upstream_port=port, profile=WIFI) as link,
            EngineThread(engine_config(link.port), client_draft("moa")) as engine,
        ):

            def restart() -> None:
                servers[0].stop()
                later(0.3, lambda: servers.append(ServerThread(SERVER_RUNNER, moa_compressor(), port=port).start()))

            recording = generate(engine, once(restart))
    finally:
        for server in servers:
            server.stop()

    assert list(recording.finished.tokens) == reference(NEW_TOKENS)
    assert_provenance_sums_up(recording)
    (restored,) = recording.of(LinkRestored)
    assert not restored.resumed and restored.replayed >= len(PROMPT) + CUT_AT - 1
    assert recording.of(Reconnecting)


def test_a_silent_link_is_noticed_by_the_keepalive_within_two_seconds() -> None:
    blackhole = LinkProfile("blackhole", latency_ms=30_000)  # nothing arrives, nothing is reset
    cut: dict[str, float] = {}
    with (
        ServerThread(SERVER_RUNNER, moa_compressor(), resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=WIFI) as link,
        EngineThread(engine_config(link.port), client_draft("moa")) as engine,
    ):

        def go_silent() -> None:
            link.set_profile(blackhole)
            cut["at"] = time.perf_counter()
            later(2.5, lambda: link.set_profile(WIFI))

        recording = generate(engine, once(go_silent))

    assert list(recording.finished.tokens) == reference(NEW_TOKENS)
    lost_at, _ = recording.first(LinkLost)
    assert lost_at - cut["at"] < 2.0  # ping interval + ping timeout + close timeout: 1.75 s
    assert recording.of(Repaired)


def test_without_a_verifier_the_output_ends_offline_and_unverified() -> None:
    with (
        ServerThread(SERVER_RUNNER, moa_compressor()) as server,
        ShaperThread(upstream_port=server.port, profile=WIFI) as link,
        EngineThread(engine_config(link.port, offline_wait_s=0.3), client_draft("moa")) as engine,
    ):
        recording = generate(engine, once(lambda: link.set_profile(preset("offline"))))

    finished = recording.finished
    assert finished.stop is None and len(finished.tokens) == NEW_TOKENS
    assert finished.stats.unverified > 0 and finished.stats.unverified == finished.stats.offline_tokens
    confirmed = NEW_TOKENS - finished.stats.unverified
    assert list(finished.tokens[:confirmed]) == reference(NEW_TOKENS)[:confirmed]
