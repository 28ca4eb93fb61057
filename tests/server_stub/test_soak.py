"""The soak suite, in-process on the tiny target: ``soak_short`` runs in CI (well under a minute), ``soak`` is long.

The long run against the real target is ``python -m server_stub.soak`` (see server_stub/soak).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from server_stub.soak.phases import burst, cancels, cuts
from server_stub.soak.process import Probe
from server_stub.soak.scenarios import Setup, crowd, malformed
from tests.server_stub.serving import TARGET, reference, serving
from tests.tiny_targets import VOCAB, random_tokens

CASES = [(p, reference(p, 40)) for p in (random_tokens(8, seed=s) * 2 for s in range(4))]
OPTIONS = {
    "max_sessions": 128,
    "max_sessions_per_client": 128,
    "max_connections_per_client": 256,
    "max_frame_bytes": 2**20,
}


def soaked(phase: Callable[[Setup], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    async def scenario() -> dict[str, Any]:
        async with serving(**OPTIONS) as server:
            setup = Setup(server.url, TARGET, CASES, VOCAB, Probe(os.getpid()), max_frame_bytes=2**20)
            return await phase(setup)

    return asyncio.run(asyncio.wait_for(scenario(), timeout=300))


@pytest.mark.soak_short
def test_malformed_frames_never_crash_or_hang_the_server_and_a_correct_client_is_always_served() -> None:
    figures = soaked(lambda setup: malformed(setup, 400, oversized_every=200))

    assert figures["frames"] == 400 and figures.get("hangs", 0) == 0 and figures["server_alive"]
    assert figures["honest_checks_passed"] == 5 and figures.get("honest_checks_failed", 0) == 0
    assert figures["kinds"].get("over_frame_limit", 0) + figures["kinds"].get("over_socket_limit", 0) == 2


@pytest.mark.soak_short
def test_a_crowd_beside_an_attacker_gets_only_right_answers() -> None:
    figures = soaked(lambda setup: crowd(setup, clients=6, seconds=8))

    assert figures["errors"] == 0 and figures["wrong_answers"] == 0 and figures["rounds"] > 50
    assert figures["poison_refused"] > 0 and figures.get("poison_other", 0) == 0


@pytest.mark.soak_short
def test_random_link_cuts_never_change_an_answer() -> None:
    figures = soaked(lambda setup: cuts(setup, 8, clients=3))

    assert figures["divergences"] == 0 and figures["connections_cut"] > 0 and figures["conversations"] > 0


@pytest.mark.soak_short
def test_cancel_during_a_generate_stops_it_and_the_session_continues() -> None:
    figures = soaked(lambda setup: cancels(setup, 6))

    assert figures["cancels"] == 3 and figures["cancel_then_continued"] == 3 and figures.get("cancel_wrong", 0) == 0


@pytest.mark.soak_short
def test_a_burst_of_new_connections_is_served_beside_running_clients() -> None:
    figures = soaked(lambda setup: burst(setup, newcomers=16, steady=4, rounds=4))

    assert figures["newcomer_failures"] == 0 and not any(k.startswith("steady_failed") for k in figures)


@pytest.mark.soak
def test_the_long_soak_in_process() -> None:
    """The full phases at the issue's sizes (run with ``pytest -m soak``; the figures come from the command)."""
    malformed_figures = soaked(lambda setup: malformed(setup, 10_000))
    crowd_figures = soaked(lambda setup: crowd(setup, clients=32, seconds=600))
    cut_figures = soaked(lambda setup: cuts(setup, 100))

    assert malformed_figures.get("hangs", 0) == 0 and malformed_figures.get("honest_checks_failed", 0) == 0
    assert crowd_figures["errors"] == 0 and crowd_figures["wrong_answers"] == 0
    assert cut_figures["divergences"] == 0
