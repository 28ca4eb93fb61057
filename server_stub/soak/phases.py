"""The soak's timing phases: a burst of new connections, random link cuts, Cancel and Bye during a Generate."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from typing import Any
from urllib.parse import urlparse

import torch

from drafts.net.link import PRESETS
from drafts.net.shaper import LinkShaper
from drafts.protocol import Answered, Bye, Cancel, Generate, Generated, Rewind, Streamed
from server_stub.soak.client import GREEDY, Conversation, SoakClient, WrongAnswer
from server_stub.soak.scenarios import Setup, percentile

# -- a burst of new connections beside running ones (does a prefill starve a verify?) ---------------


async def burst(setup: Setup, newcomers: int = 32, steady: int = 8, rounds: int = 8) -> dict[str, Any]:
    stop = asyncio.Event()
    steady_ms: list[tuple[float, float]] = []  # (when it ended, round ms) of the running clients
    figures: Counter[str] = Counter()

    async def run_steady(index: int) -> None:
        rng = random.Random(f"{setup.seed}:steady:{index}")
        client = await SoakClient.open(setup.url, setup.target)
        while not stop.is_set():
            conversation = setup.conversation(rng)
            await conversation.start(client)
            while not stop.is_set() and not conversation.done:
                await conversation.round(client)
                steady_ms.append((time.monotonic(), conversation.latencies_ms[-1]))
            await client.ask(Rewind(client.new_id(), 0))  # the next conversation starts from nothing
        await client.close()

    async def arrive(index: int, at: float) -> float:
        rng = random.Random(f"{setup.seed}:new:{index}")
        client = await SoakClient.open(setup.url, setup.target)
        conversation = setup.conversation(rng)
        await conversation.start(client)
        await conversation.round(client)
        first = time.monotonic() - at
        await conversation.run(client, rounds)
        await client.close()
        return first

    running = [asyncio.create_task(run_steady(i)) for i in range(steady)]
    await asyncio.sleep(3.0)  # the steady clients are verifying
    at = time.monotonic()
    firsts = await asyncio.gather(*(arrive(i, at) for i in range(newcomers)), return_exceptions=True)
    ended = time.monotonic()
    stop.set()
    for outcome in await asyncio.gather(*running, return_exceptions=True):
        if isinstance(outcome, BaseException):
            figures[f"steady_failed:{type(outcome).__name__}:{str(outcome)[:60]}"] += 1
    waits = [f * 1e3 for f in firsts if isinstance(f, float)]
    during = [ms for when, ms in steady_ms if at <= when <= ended]
    before = [ms for when, ms in steady_ms if when < at]
    return {
        "newcomers": newcomers,
        "steady_clients": steady,
        "newcomer_failures": sum(not isinstance(f, float) for f in firsts),
        "first_token_ms_p50_p99_max": [percentile(waits, 0.5), percentile(waits, 0.99), percentile(waits, 1.0)],
        "steady_round_ms_before_p99": percentile(before, 0.99),
        "steady_round_ms_during_p50_p99_max": [
            percentile(during, 0.5),
            percentile(during, 0.99),
            percentile(during, 1.0),
        ],
        **figures,
    }


# -- random link cuts, resumed ------------------------------------------------------------------------


async def cuts(setup: Setup, count: int, clients: int = 4) -> dict[str, Any]:
    url = urlparse(setup.url)
    assert url.hostname is not None and url.port is not None
    shaper = await LinkShaper.start(upstream_host=url.hostname, upstream_port=url.port)
    shaped = f"ws://127.0.0.1:{shaper.port}"
    stop = asyncio.Event()
    figures: Counter[str] = Counter()

    async def talk(index: int) -> None:
        rng = random.Random(f"{setup.seed}:cut:{index}")
        while not stop.is_set():
            conversation = setup.conversation(rng)
            try:
                client = await conversation.survive(shaped, setup.target)
                await client.close()
            except WrongAnswer as exc:
                figures["divergences"] += 1
                figures[f"divergence:{str(exc)[:60]}"] += 1
                continue
            except TimeoutError:
                figures["unfinished"] += 1
                continue
            ok = conversation.out == conversation.reference[: len(conversation.out)]
            figures["conversations" if ok else "divergences"] += 1
            figures["resumed"] += conversation.resumes
            figures["replayed"] += conversation.replays

    talkers = [asyncio.create_task(talk(i)) for i in range(clients)]
    rng = random.Random(f"{setup.seed}:cutter")
    for _ in range(count):
        await asyncio.sleep(rng.uniform(0.1, 1.0))
        await shaper.set_profile(PRESETS["offline"])  # resets every open connection, wherever it is
        await asyncio.sleep(rng.uniform(0.05, 0.3))
        await shaper.set_profile(PRESETS["lan"])
    await asyncio.sleep(2.0)
    stop.set()
    await asyncio.gather(*talkers, return_exceptions=True)
    stats = shaper.stats()
    await shaper.close()
    return {
        "cuts": count,
        "connections_cut": stats.cut_connections,
        "divergences": figures["divergences"],
        **figures,
    }


# -- Cancel and Bye during a Generate -----------------------------------------------------------------


async def cancels(setup: Setup, times: int = 10) -> dict[str, Any]:
    rng = random.Random(f"{setup.seed}:cancel")
    after_cancel: list[int] = []
    bye_close_ms: list[float] = []
    figures: Counter[str] = Counter()
    for i in range(times):
        client, conversation, request = await _generating(setup, rng)
        if i % 2 == 0:
            parts = await _parts(client, request, 2)
            await client.ws.send(client.protocol.send(Cancel(request.request_id)))
            later: list[Generated] = []
            reply = await _reply(client, request, later)
            after_cancel.append(len(later))
            tokens = [int(p.tokens[0]) for p in [*parts, *later]]
            if (
                not (isinstance(reply, Generated) and reply.cancelled)
                or tokens != conversation.reference[: len(tokens)]
            ):
                figures["cancel_wrong"] += 1
                continue
            conversation.out = tokens
            try:
                await conversation.run(client, 3)  # the session continues from what it committed
                figures["cancel_then_continued"] += 1
            except WrongAnswer:
                figures["cancel_wrong"] += 1
            await client.close()
        else:
            await _parts(client, request, 2)
            sent = time.monotonic()
            session = client.welcome.session_id if client.welcome else ""
            await client.ws.send(client.protocol.send(Bye()))
            closed = await _logged_close(setup, session, sent)
            if closed is not None:
                bye_close_ms.append(closed)
            await client.close()
    return {
        "cancels": len(after_cancel),
        "parts_after_cancel_max": max(after_cancel, default=0),
        "byes": times - len(after_cancel),
        "bye_to_session_closed_ms_max": percentile(bye_close_ms, 1.0),
        **figures,
    }


async def _generating(setup: Setup, rng: random.Random) -> tuple[SoakClient, Conversation, Generate]:
    client = await SoakClient.open(setup.url, setup.target)
    conversation = setup.conversation(rng)
    await conversation.start(client)
    length = len(conversation.reference) - 1
    request = Generate(client.new_id(), conversation.context[-1], length, torch.empty(0, dtype=torch.int64), GREEDY)
    await client.ws.send(client.protocol.send(request))
    return client, conversation, request


async def _parts(client: SoakClient, request: Generate, n: int) -> list[Generated]:
    parts: list[Generated] = []
    while len(parts) < n:
        for event in client.protocol.receive(await asyncio.wait_for(client.ws.recv(decode=False), 60)):
            if isinstance(event, Streamed):
                parts.append(event.part)
    return parts


async def _reply(client: SoakClient, request: Generate, parts: list[Generated]) -> Any:
    while True:
        for event in client.protocol.receive(await asyncio.wait_for(client.ws.recv(decode=False), 60)):
            if isinstance(event, Streamed):
                parts.append(event.part)
            elif isinstance(event, Answered) and event.request.request_id == request.request_id:
                return event.reply


async def _logged_close(setup: Setup, session: str, since: float) -> float | None:
    """Milliseconds until the server logs session.closed for ``session`` (None: no log to read)."""
    if setup.probe.log_path is None:
        return None
    while time.monotonic() - since < 30:
        if any(
            line.get("event") == "session.closed" and line.get("session") == session for line in setup.probe.log_lines()
        ):
            return (time.monotonic() - since) * 1e3
        await asyncio.sleep(0.02)
    return float("inf")
