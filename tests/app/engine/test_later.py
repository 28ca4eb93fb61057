"""A prompt's vectors after its first token (Prefill(later), Fetch): a real moa-server on 127.0.0.1.

The order is the engine's, not timing's: the pieces are fetched only once the first token's reply
is in, so they cannot come before it; a server without the capability gets the chunked Prefill.
"""

from __future__ import annotations

import asyncio

import pytest
import torch

from app.engine import session as session_module
from app.engine.errors import LinkDownError, VerifierRefusedError
from app.engine.events import LinkLost
from app.engine.later import Later, fetch
from app.engine.session import VerifierSession
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.errors import ErrorCode
from drafts.net import LinkProfile, ShaperThread, preset
from drafts.protocol import Fetch, Fetched, Prefilled, Verified, Verify
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
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

PROMPT = random_tokens(50, seed=11)
Order = list[tuple[str, int]]


async def _start(port: int, history: list[int]) -> tuple[Order, list[Prefilled], list[Later], VerifierSession]:
    """A generation's start against the server at ``port``: the prompt but its newest token held, the newest
    verified alone behind it; (what happened in order, the chunks taken, the vectors to come, the session)."""
    session = VerifierSession(engine_config(port), client_draft("moa"), lambda event: None)
    await session.connect()
    order: Order = []
    chunks: list[Prefilled] = []
    laters: list[Later] = []

    async def take(start: int, tokens: list[int], reply: Prefilled) -> None:
        order.append(("chunk", start))
        chunks.append(reply)

    def later(vectors: Later) -> None:
        put = vectors.put

        def heard(start: int, length: int, reply: Fetched) -> None:
            order.append(("piece", start))
            put(start, length, reply)

        vectors.put = heard  # type: ignore[method-assign]
        laters.append(vectors)

    first = Verify.of(0, history[-1], DraftTree.chain([], None, None), SamplingConfig())
    reply = await session.start(history[:-1], take, None, first, later)
    assert isinstance(reply, Verified)
    order.append(("first token", reply.next_token))
    for vectors in laters:
        assert vectors.task is not None
        await vectors.task
    return order, chunks, laters, session


def _rows(pieces: list[Prefilled]) -> torch.Tensor:
    return torch.cat([p.activations["memory"] for p in pieces])


def test_the_first_token_comes_before_the_prompts_vectors_which_come_after_in_order_as_a_plain_prefills(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(session_module, "PREFILL_FRAME_BYTES", 3000)  # several pieces

    async def scenario(port: int) -> tuple[Order, list[Prefilled], list[Prefilled], int, list[int]]:
        order, chunks, laters, session = await _start(port, PROMPT)
        requests = session.traffic.requests
        (vectors,) = laters
        pieces = [reply for _, _, reply in vectors.pieces()]
        held = list(session.held)
        await session.close()
        return order, chunks, pieces, requests, held

    with ServerThread(SERVER_RUNNER, moa_compressor()) as server:
        order, chunks, pieces, requests, held = asyncio.run(asyncio.wait_for(scenario(server.port), 60))
    with ServerThread(SERVER_RUNNER, moa_compressor(), later=False) as server:  # the reference: chunks
        plain_order, plain_chunks, _, _ = asyncio.run(asyncio.wait_for(_start(server.port, PROMPT), 60))

    assert order[0] == ("first token", reference(1, PROMPT)[0]) and not chunks
    starts = [start for kind, start in order[1:]]
    assert all(kind == "piece" for kind, _ in order[1:]) and len(starts) >= 3 and starts == sorted(starts)
    assert held == PROMPT  # the prompt, and its newest token verified behind it
    assert requests == 2 + len(starts)  # one Prefill, the first Verify, the Fetches
    assert [kind for kind, _ in plain_order] == ["chunk"] * len(plain_chunks) + ["first token"]
    # the same rows (one forward over the prompt against several: float16 rounding apart)
    assert torch.allclose(_rows(pieces), _rows(plain_chunks), atol=2e-2) and pieces[-1].committed == len(PROMPT) - 1


def test_a_server_without_the_capability_gets_the_chunked_prefill() -> None:
    with ServerThread(SERVER_RUNNER, moa_compressor(), later=False) as server:
        order, chunks, laters, _ = asyncio.run(asyncio.wait_for(_start(server.port, PROMPT), 60))

    assert not laters and len(chunks) >= 2 and order[-1][0] == "first token"
    sizes = [len(c.activations["memory"]) for c in chunks]
    assert [start for _, start in order[:-1]] == [sum(sizes[:k]) for k in range(len(chunks))]


@pytest.mark.parametrize("stream", [False, True], ids=["rounds", "stream"])
@pytest.mark.parametrize("later", [True, False], ids=["later", "chunked"])
def test_the_answer_is_the_targets_with_the_vectors_later_or_not_over_4g(stream: bool, later: bool) -> None:
    decode = DecodeConfig(max_new_tokens=16, shape=DraftShape(gamma=4))
    with (
        ServerThread(SERVER_RUNNER, moa_compressor(), later=later) as server,
        ShaperThread(upstream_port=server.port, profile=preset("4g")) as link,
        EngineThread(engine_config(link.port, stream=stream), client_draft("moa")) as engine,
    ):
        first = engine.generate(PROMPT, decode)
        second = engine.generate(PROMPT[:30] + random_tokens(8, seed=12), decode)  # a rewind, then the rest

    assert list(first.tokens) == reference(16, PROMPT)
    assert list(second.tokens) == reference(16, PROMPT[:30] + random_tokens(8, seed=12))


def test_a_refused_or_lost_piece_ends_the_vectors_early_with_the_reason_and_the_pieces_before_it() -> None:
    async def scenario(failure: Exception) -> tuple[list[int], str]:
        vectors = Later(0, list(range(10)))
        asked: list[Fetch] = []

        async def ask(request: Fetch, pipelined: bool) -> Fetched:
            asked.append(request)
            if request.start >= 4:
                raise failure
            return Fetched(9, request.start, {"memory": torch.zeros(request.length, 2)})

        first: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        first.set_result(None)
        await fetch(vectors, ask, first, lambda: 4, 2)
        return [start for start, _, _ in vectors.pieces()], vectors.reason

    lost = asyncio.run(scenario(LinkDownError("the link dropped")))
    refused = asyncio.run(scenario(VerifierRefusedError(ErrorCode.BAD_FRAME, "keeps no rows")))

    assert lost == ([0], "the link dropped")
    assert refused[0] == [0] and "keeps no rows" in refused[1]


def test_on_a_slow_link_the_fetched_pieces_never_hold_a_pong_past_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "PREFILL_FRAME_BYTES", 3000)  # 0.5 s at this link's 6 kB/s
    slow = LinkProfile("slow", latency_ms=5, bandwidth_bps=50_000)
    prompt = random_tokens(120, seed=7)
    recording = Recording()
    with (
        ServerThread(SERVER_RUNNER, moa_compressor()) as server,
        ShaperThread(upstream_port=server.port, profile=slow) as link,
        EngineThread(engine_config(link.port, stream=True), client_draft("moa")) as engine,
    ):
        for event in engine.stream(prompt, DecodeConfig(max_new_tokens=4)):
            recording.add(event)

    assert list(recording.finished.tokens) == reference(4, prompt) and not recording.of(LinkLost)
