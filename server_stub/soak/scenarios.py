"""The soak's phases; each takes a running server (its URL and a Probe) and returns its figures."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from drafts.protocol import Bye, Error, Limits, Rewind, Verify, decode, encode
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from server_stub.soak.client import Conversation, SoakClient, WrongAnswer
from server_stub.soak.malformed import KINDS, oversized, valid_frames
from server_stub.soak.process import Probe

ANSWER_TIMEOUT_S = 10.0  # a malformed frame with no answer and no close in this long is a hang


@dataclass
class Setup:
    """What every phase needs: the server, the target's identity, prompts with their greedy references."""

    url: str
    target: dict[str, Any]
    cases: list[tuple[list[int], list[int]]]  # (prompt tokens, the target's greedy continuation)
    vocab: int
    probe: Probe
    max_frame_bytes: int = 64 * 2**20
    seed: int = 0
    rng: random.Random = field(default_factory=random.Random)

    def conversation(self, rng: random.Random) -> Conversation:
        prompt, reference = rng.choice(self.cases)
        return Conversation(prompt, reference, self.vocab, rng)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


async def honest_check(setup: Setup, rng: random.Random, rounds: int = 2) -> None:
    """A correct client's session: prefill, a few checked rounds, Bye. Raises on any wrong or missing answer."""
    client = await SoakClient.open(setup.url, setup.target)
    conversation = setup.conversation(rng)
    await conversation.start(client)
    await conversation.run(client, rounds)
    await client.ws.send(client.protocol.send(Bye()))
    await client.close()


# -- malformed frames ----------------------------------------------------------------------------


async def malformed(setup: Setup, frames: int, oversized_every: int = 2500) -> dict[str, Any]:
    rng = random.Random(setup.seed)
    figures: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    client: SoakClient | None = None
    for i in range(frames):
        if client is None:
            client = await SoakClient.open(setup.url, setup.target)
        if i % 100 == 99:
            await _checked(setup, rng, figures)
        if i % 50 == 25:  # garbage before Hello: fatal, on its own connection
            kinds["before_hello"] += 1
            figures[await _before_hello(setup.url, rng.randbytes(rng.randint(1, 300)))] += 1
            continue
        if oversized_every and i % oversized_every == oversized_every // 2:
            kind, frame = _oversize(setup, rng)
        else:
            kind = rng.choice(list(KINDS))
            frame = KINDS[kind](rng, rng.choice(valid_frames(rng, setup.vocab)))
        kinds[kind] += 1
        outcome = await _send_and_wait(client, frame)
        figures[outcome] += 1
        if outcome != "answered":
            figures[f"{outcome}_after:{kind}"] += 1  # closes are by design: a wire-version flip, a 1009
            await client.close()
            client = None
    if client is not None:
        await client.close()
    await _checked(setup, rng, figures)
    return {"frames": sum(kinds.values()), "kinds": dict(kinds), **dict(figures), "server_alive": setup.probe.alive()}


def _oversize(setup: Setup, rng: random.Random) -> tuple[str, bytes | str]:
    if rng.random() < 0.5:
        return "over_frame_limit", oversized(setup.max_frame_bytes + rng.randint(1, 2**20))  # TOO_LARGE reply
    return "over_socket_limit", oversized(2 * setup.max_frame_bytes + 2 * 2**20)  # the socket closes (1009)


async def _send_and_wait(client: SoakClient, frame: bytes | str) -> str:
    """ "answered" (one reply or more), "closed" by the server, or "hangs" (neither within the timeout)."""
    try:
        await client.ws.send(frame)
        try:
            await asyncio.wait_for(client.ws.recv(decode=False), ANSWER_TIMEOUT_S)
        except TimeoutError:
            return "hangs"
        with contextlib.suppress(TimeoutError):
            while True:  # a frame that happened to be a valid Generate streams more than one reply
                await asyncio.wait_for(client.ws.recv(decode=False), 0.005)
    except ConnectionClosed:
        return "closed"
    return "answered"


async def _before_hello(url: str, frame: bytes) -> str:
    async with connect(url, max_size=None, compression=None) as ws:
        await ws.send(frame)
        try:
            await asyncio.wait_for(ws.recv(decode=False), ANSWER_TIMEOUT_S)
            await asyncio.wait_for(ws.recv(decode=False), ANSWER_TIMEOUT_S)
        except ConnectionClosed:
            return "fatal_then_closed"
        except TimeoutError:
            return "hangs"
    return "not_closed"


async def _checked(setup: Setup, rng: random.Random, figures: Counter[str]) -> None:
    try:
        await honest_check(setup, rng)
        figures["honest_checks_passed"] += 1
    except (WrongAnswer, OSError, ConnectionClosed, TimeoutError) as exc:
        figures["honest_checks_failed"] += 1
        figures[f"honest_failure:{type(exc).__name__}"] += 1


# -- a crowd of honest clients, and one attacker ---------------------------------------------------


def poisoned_verify(root: int) -> bytes:
    """A Verify whose sampling underflows float32 (temperature 1e-300), encoded as an attacker would."""
    sampling = object.__new__(SamplingConfig)
    for name, value in {"temperature": 1e-300, "top_k": 0, "top_p": 1.0, "seed": None}.items():
        object.__setattr__(sampling, name, value)
    return encode(Verify.of(1, root, DraftTree.chain([root]), sampling))


async def _attack(setup: Setup, stop: asyncio.Event, figures: Counter[str]) -> None:
    """Poisoned verifies every 0.2 s; each must be refused (BAD_FRAME) and hurt nobody else."""
    client = await SoakClient.open(setup.url, setup.target)
    prompt, _ = setup.cases[0]
    while not stop.is_set():
        await client.ws.send(poisoned_verify(prompt[-1]))  # outside the client's protocol: read the reply raw
        reply = decode(await asyncio.wait_for(client.ws.recv(decode=False), 60), Limits())
        refused = isinstance(reply, Error) and reply.code.value == "BAD_FRAME"
        figures["poison_refused" if refused else "poison_other"] += 1
        await asyncio.sleep(0.2)
    await client.close()


async def _honest(setup: Setup, index: int, stop: asyncio.Event, figures: Counter[str], latencies: list[float]) -> None:
    rng = random.Random(f"{setup.seed}:crowd:{index}")
    while not stop.is_set():
        try:
            client = await SoakClient.open(setup.url, setup.target)
            while not stop.is_set():
                conversation = setup.conversation(rng)
                await conversation.start(client)
                await conversation.run(client)
                if rng.random() < 0.5:  # a regenerated answer: Rewind to the prompt, same output
                    await conversation.rewind_to_start(client)
                    await conversation.run(client)
                latencies += conversation.latencies_ms
                figures["conversations"] += 1
                figures["rounds"] += len(conversation.latencies_ms)
                reply = await client.ask(Rewind(client.new_id(), 0))
                if isinstance(reply, Error):
                    raise WrongAnswer(f"rewind to 0 refused: {reply.message}")
                if rng.random() < 0.2:
                    break  # a new connection (and session) for the next conversations
            await client.ws.send(client.protocol.send(Bye()))
            await client.close()
        except WrongAnswer as exc:
            figures["wrong_answers"] += 1
            figures[f"wrong:{str(exc)[:60]}"] += 1
        except (OSError, ConnectionClosed, TimeoutError) as exc:
            figures["errors"] += 1
            figures[f"error:{type(exc).__name__}:{str(exc)[:60]}"] += 1


async def crowd(setup: Setup, clients: int, seconds: float, attacker: bool = True) -> dict[str, Any]:
    stop = asyncio.Event()
    figures: Counter[str] = Counter()
    latencies: list[float] = []
    memory: list[tuple[float, float]] = []
    started = time.monotonic()
    fds_before = setup.probe.fds()
    tasks = [asyncio.create_task(_honest(setup, i, stop, figures, latencies)) for i in range(clients)]
    if attacker:
        tasks.append(asyncio.create_task(_attack(setup, stop, figures)))
    while time.monotonic() - started < seconds:
        memory.append((round(time.monotonic() - started, 1), round(setup.probe.rss_mb(), 1)))
        await asyncio.sleep(min(5.0, seconds / 10))
    stop.set()
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, BaseException):
            figures[f"task_failed:{type(outcome).__name__}:{str(outcome)[:60]}"] += 1
    memory.append((round(time.monotonic() - started, 1), round(setup.probe.rss_mb(), 1)))
    warm = [mb for t, mb in memory if t >= min(60.0, seconds / 3)] or [memory[-1][1]]
    return {
        "clients": clients,
        "seconds": round(time.monotonic() - started, 1),
        **{k: v for k, v in figures.items()},
        "errors": figures["errors"],
        "wrong_answers": figures["wrong_answers"],
        "round_ms_p50": percentile(latencies, 0.5),
        "round_ms_p99": percentile(latencies, 0.99),
        "round_ms_max": percentile(latencies, 1.0),
        "rss_mb_after_warmup_first_last_max": [warm[0], warm[-1], max(warm)],
        "rss_mb_samples": memory,
        "fds_before_after": [fds_before, setup.probe.fds()],
    }
