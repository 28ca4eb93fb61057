"""The verifier session against a real moa-server on 127.0.0.1: prefills in chunks that keep frames small."""

from __future__ import annotations

import asyncio

import pytest

from app.engine import session as session_module
from app.engine.events import EngineEvent, LinkLost
from app.engine.session import VerifierSession
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.net import LinkProfile, ShaperThread
from tests.app.engine.scenario import (
    SERVER_RUNNER,
    Recording,
    client_draft,
    engine_config,
    moa_compressor,
    reference,
)
from tests.app.engine.servers import ServerThread
from tests.tiny_targets import random_tokens


def test_a_long_prefill_goes_in_pipelined_chunks_that_share_one_round_trip(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session_module, "PREFILL_FRAME_BYTES", 3000)
    tokens = random_tokens(60, seed=5)
    pieces: list[tuple[int, list[int], int]] = []

    async def scenario(port: int) -> tuple[int, int, list[int]]:
        events: list[EngineEvent] = []
        session = VerifierSession(engine_config(port), client_draft("moa"), events.append)
        await session.start([])
        trips, requests = session.traffic.round_trips, session.traffic.requests

        async def take(start: int, piece: list[int], reply: object) -> None:
            pieces.append((start, piece, getattr(reply, "committed", -1)))

        await session.prefill(tokens, take)
        await session.close()
        return session.traffic.round_trips - trips, session.traffic.requests - requests, session.held

    with ServerThread(SERVER_RUNNER, moa_compressor()) as server:
        trips, requests, held = asyncio.run(asyncio.wait_for(scenario(server.port), 60))

    sizes = [len(piece) for _, piece, _ in pieces]
    assert [t for _, piece, _ in pieces for t in piece] == tokens == held and requests == len(sizes) >= 3
    assert [start for start, _, _ in pieces] == [sum(sizes[:k]) for k in range(len(sizes))]
    assert [committed for _, _, committed in pieces] == [sum(sizes[: k + 1]) for k in range(len(sizes))]
    assert max(sizes) <= session_module.FIRST_PREFILL_CHUNK and trips == 1


def test_on_a_slow_link_a_long_prompts_vectors_arrive_in_frames_that_never_hold_a_pong_past_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session_module, "PREFILL_FRAME_BYTES", 3000)  # 0.5 s at this link's 6 kB/s
    slow = LinkProfile("slow", latency_ms=5, bandwidth_bps=50_000)  # the whole prompt's 15 kB: 2.4 s
    prompt = random_tokens(120, seed=7)
    recording = Recording()
    with (
        ServerThread(SERVER_RUNNER) as server,
        ShaperThread(upstream_port=server.port, profile=slow) as link,
        EngineThread(engine_config(link.port), client_draft("eagle")) as engine,
    ):
        for event in engine.stream(prompt, DecodeConfig(max_new_tokens=4)):
            recording.add(event)

    assert list(recording.finished.tokens) == reference(4, prompt) and not recording.of(LinkLost)


def test_holding_a_new_history_keeps_the_common_prefix_and_sends_only_the_rest() -> None:
    first, second = random_tokens(30, seed=5), random_tokens(30, seed=5)[:20] + random_tokens(6, seed=6)

    async def scenario(port: int) -> tuple[int, int, list[int], int]:
        session = VerifierSession(engine_config(port), client_draft("moa"), lambda event: None)
        await session.start(first)
        sent = session.prefill_sent
        kept = await session.hold(second)
        held, committed = list(session.held), session.committed
        await session.close()
        return kept, session.prefill_sent - sent, held, committed

    with ServerThread(SERVER_RUNNER, moa_compressor()) as server:
        kept, sent, held, committed = asyncio.run(asyncio.wait_for(scenario(server.port), 60))

    assert kept == 20 and sent == 6 and held == second and committed == len(second)


def test_a_rewind_and_the_prefill_behind_it_take_one_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "PREFILL_FRAME_BYTES", 3000)
    first, second = random_tokens(40, seed=5), random_tokens(30, seed=5)[:10] + random_tokens(30, seed=6)

    async def scenario(port: int) -> tuple[int, int, list[int]]:
        session = VerifierSession(engine_config(port), client_draft("moa"), lambda event: None)
        await session.start(first)
        trips, requests = session.traffic.round_trips, session.traffic.requests
        await session.hold(second)
        await session.close()
        return session.traffic.round_trips - trips, session.traffic.requests - requests, list(session.held)

    with ServerThread(SERVER_RUNNER, moa_compressor()) as server:
        trips, requests, held = asyncio.run(asyncio.wait_for(scenario(server.port), 60))

    assert held == second and trips == 1 and requests >= 3  # a Rewind and two Prefill chunks or more
