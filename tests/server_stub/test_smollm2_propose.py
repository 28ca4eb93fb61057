"""Speculative streaming with the real SmolLM2 on a loopback server: proposals change the parts, never the tokens."""

from __future__ import annotations

import asyncio
import threading

import pytest
import torch

from drafts.protocol import Generate, Generated, Needs, Prefill, Prefilled, Propose
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree
from server_stub.backend.transformers_backend import TransformersBackend, TransformersBackendConfig
from server_stub.server import VerifierServer
from tests.server_stub.remote_client import GREEDY, RemoteClient
from tests.server_stub.serving import run, serving

pytestmark = pytest.mark.integration

CHAT = [{"role": "user", "content": "List the days of the week, one per line."}]
NEW_TOKENS = 32
DEPTH = 4  # the oracle client drafts this many tokens below each part's newest token
NEEDS = Needs(hidden_layers=(30,))


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return TargetRunner(load_target(None, torch.device("cpu"), torch.float32, linear="auto"))


@pytest.fixture(scope="module")
def prompt(runner: TargetRunner) -> list[int]:
    return list(runner.format_chat(CHAT))


async def _streamed(
    server: VerifierServer, client: RemoteClient, prompt: list[int], guess: list[int]
) -> tuple[list[Generated], object]:
    """A proposing Generate whose client drafts ``guess`` (the tokens it expects): DEPTH tokens from the root
    (in the box before the first step: the worker is held while it arrives), then from each part's newest token."""
    held = threading.Event()
    holding = asyncio.ensure_future(server.worker.call(lambda backend: held.wait(30)))
    prefill = Prefill(client.protocol.new_request_id(), torch.tensor(prompt[:-1]))
    request = Generate(client.protocol.new_request_id(), prompt[-1], NEW_TOKENS, torch.tensor([2]), GREEDY, True)
    root = len(prompt) - 1

    def proposal(base: int) -> Propose:
        start = base - root  # guess[start] is the token after the one at index base
        return Propose.of(request.request_id, base, DraftTree.chain(guess[start : start + DEPTH]))

    async def on_part(part: Generated) -> None:
        if not part.done:
            await client.send(proposal(part.committed))

    await client.send(prefill)
    await client.send(request)
    await client.send(proposal(root))
    await asyncio.sleep(0.2)
    held.set()
    await holding
    assert isinstance(await client.answer(prefill), Prefilled)
    parts: list[Generated] = []
    return parts, await client.answer(request, parts, on_part)


def test_proposals_from_the_targets_own_tokens_come_back_drafted_and_wrong_ones_change_nothing(
    runner: TargetRunner, prompt: list[int]
) -> None:
    async def scenario() -> tuple[list[int], tuple[list[Generated], object], tuple[list[Generated], object]]:
        backend = TransformersBackend(runner, TransformersBackendConfig())
        async with serving(backend) as server:
            client = await RemoteClient.connect(server.url)
            await client.hello(runner.fingerprint.to_dict(), NEEDS)
            await client.prefill(prompt[:-1])
            plain_parts, plain_reply = await client.generate(prompt[-1], NEW_TOKENS, stops=(2,))
            assert isinstance(plain_reply, Generated)
            plain = [t for p in [*plain_parts, plain_reply] for t in p.tokens.tolist()]
            results = []
            for guess in (plain, [(t + 1) % runner.fingerprint.vocab_size for t in plain]):
                client = await RemoteClient.connect(server.url)
                await client.hello(runner.fingerprint.to_dict(), NEEDS)
                results.append(await _streamed(server, client, prompt, guess + [0] * DEPTH))
            return plain, results[0], results[1]

    plain, (right_parts, right_reply), (wrong_parts, wrong_reply) = run(scenario())

    right = [*right_parts, right_reply]
    wrong = [*wrong_parts, wrong_reply]
    assert [t for p in right for t in p.tokens.tolist()] == plain  # type: ignore[attr-defined]
    assert [t for p in wrong for t in p.tokens.tolist()] == plain  # type: ignore[attr-defined]
    assert len(right) < len(plain) and right[0].drafted == DEPTH  # type: ignore[attr-defined]
    assert all(p.drafted == 0 for p in wrong)  # type: ignore[attr-defined]
    for part in right:
        assert part.activations["hidden:30"].shape == (part.tokens.numel(), 576)  # type: ignore[attr-defined]
