"""moa-server's speculative streaming (Generate with propose=True, Propose): a loopback server, the tiny target."""

from __future__ import annotations

import asyncio
import json
import struct
import threading
from collections.abc import Callable, Sequence

import torch

from drafts.errors import ErrorCode
from drafts.protocol import (
    Cancel,
    Error,
    Generate,
    Generated,
    Limits,
    Needs,
    Prefill,
    Prefilled,
    Propose,
    Verified,
    decode,
    encode,
)
from drafts.protocol.codec import PREFIX_BYTES
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from server_stub.server import VerifierServer
from tests.server_stub.remote_client import GREEDY, RemoteClient
from tests.server_stub.serving import PROMPT, RUNNER, opened, reference, run, serving
from tests.server_stub.test_server_cancel import SlowBackend

ROOT_INDEX = len(PROMPT) - 1  # the session index of the Generate's root (PROMPT[:-1] is prefilled)
HIDDEN = Needs(hidden_layers=(1,))
Proposals = Callable[[int], Sequence[Propose | bytes]]  # the Generate's request id -> what to send after it


def _oracle(tokens: list[int], base: int = ROOT_INDEX) -> Proposals:
    """A chain of the target's own next tokens, drafted from the token at ``base``."""
    return lambda request_id: [Propose.of(request_id, base, DraftTree.chain(tokens))]


async def _proposing(
    server: VerifierServer,
    client: RemoteClient,
    proposals: Proposals,
    n: int,
    stops: tuple[int, ...] = (),
    sampling: SamplingConfig = GREEDY,
) -> tuple[list[Generated], object]:
    """Prefill, then a proposing Generate with ``proposals`` sent right behind it, all while the server's
    worker is held, so they are in the Generate's box before its first step: (its parts, its reply)."""
    held = threading.Event()
    holding = asyncio.ensure_future(server.worker.call(lambda backend: held.wait(10)))  # a barrier: runs alone
    prefill = Prefill(client.protocol.new_request_id(), torch.tensor(PROMPT[:-1]))
    stop_tokens = torch.tensor(stops, dtype=torch.int64)
    generate = Generate(client.protocol.new_request_id(), PROMPT[-1], n, stop_tokens, sampling, propose=True)
    await client.send(prefill)
    await client.send(generate)
    for proposal in proposals(generate.request_id):
        await (client.ws.send(proposal) if isinstance(proposal, bytes) else client.send(proposal))
    await asyncio.sleep(0.2)  # the server's reader takes the frames in (the worker is what is held)
    held.set()
    await holding
    assert isinstance(await client.answer(prefill), Prefilled)
    parts: list[Generated] = []
    return parts, await client.answer(generate, parts)


def _tokens(parts: list[Generated], reply: object) -> list[int]:
    assert isinstance(reply, Generated), reply
    return [t for p in [*parts, reply] for t in p.tokens.tolist()]


def test_the_targets_own_tokens_proposed_come_back_in_fewer_parts_as_drafted_tokens() -> None:
    target = reference(PROMPT, 24)

    async def scenario() -> tuple[list[Generated], object]:
        async with serving() as server:
            client, welcome = await opened(server, needs=HIDDEN)
            assert welcome.capabilities.propose
            return await _proposing(server, client, _oracle(target), 24)

    parts, reply = run(scenario())

    everything = [*parts, reply]
    assert _tokens(parts, reply) == target
    assert len(everything) == 1 and reply.drafted == 23  # type: ignore[union-attr]  # one step: 23 drafted + 1
    committed = ROOT_INDEX
    for part in everything:
        assert isinstance(part, Generated)
        assert part.drafted <= part.tokens.numel() - 1  # no stop token: the last token is the target's
        assert part.activations["hidden:1"].shape[0] == part.tokens.numel()  # root + all but the newest
        committed += part.tokens.numel()
        assert part.committed == committed


def test_streamed_activations_are_those_of_the_committed_tokens() -> None:
    target = reference(PROMPT, 12)

    async def scenario() -> tuple[list[Generated], object, object]:
        async with serving() as server:
            client, _ = await opened(server, needs=HIDDEN)
            parts, reply = await _proposing(server, client, _oracle(target[:5]), 12)
            fresh, _ = await opened(server, needs=HIDDEN)
            return parts, reply, await fresh.prefill(PROMPT + target[:-1])

    parts, reply, prefilled = run(scenario())

    assert isinstance(reply, Generated) and isinstance(prefilled, Prefilled)
    streamed = torch.cat([p.activations["hidden:1"] for p in [*parts, reply]]).float()  # (12, H)
    expected = prefilled.activations["hidden:1"][ROOT_INDEX:].float()  # the root and target[:-1]
    assert streamed.shape == expected.shape
    torch.testing.assert_close(streamed, expected, atol=2e-2, rtol=2e-2)


def test_wrong_proposals_change_nothing_but_the_cost() -> None:
    target = reference(PROMPT, 16)
    vocab = RUNNER.fingerprint.vocab_size
    wrong = [(t + 1) % vocab for t in target]

    async def scenario() -> tuple[list[Generated], object]:
        async with serving() as server:
            client, _ = await opened(server)
            return await _proposing(server, client, _oracle(wrong), 16)

    parts, reply = run(scenario())

    assert _tokens(parts, reply) == target
    assert all(p.drafted == 0 and p.tokens.numel() == 1 for p in [*parts, reply])  # type: ignore[attr-defined]


def test_a_deep_proposal_serves_step_after_step_below_the_tokens_the_server_holds() -> None:
    target = reference(PROMPT, 24)

    async def scenario() -> tuple[list[Generated], object]:
        async with serving(max_tree=4) as server:  # each step verifies 4 nodes of the 23 proposed
            client, welcome = await opened(server)
            assert welcome.capabilities.max_tree_nodes == 4
            return await _proposing(server, client, _oracle(target), 24)

    parts, reply = run(scenario())

    assert _tokens(parts, reply) == target
    assert [p.tokens.numel() for p in [*parts, reply]] == [5, 5, 5, 5, 4]  # type: ignore[attr-defined]
    assert [p.drafted for p in [*parts, reply]] == [4, 4, 4, 4, 3]  # type: ignore[attr-defined]


def test_a_proposal_drafted_before_the_generates_root_is_ignored() -> None:
    target = reference(PROMPT, 16)
    older = _oracle([PROMPT[-1], *target], base=ROOT_INDEX - 1)  # the server knows no token before the root

    async def scenario() -> tuple[list[Generated], object]:
        async with serving() as server:
            client, _ = await opened(server)
            return await _proposing(server, client, older, 16)

    parts, reply = run(scenario())

    assert _tokens(parts, reply) == target
    assert all(p.drafted == 0 for p in [*parts, reply])  # type: ignore[attr-defined]


def test_a_stop_token_inside_the_accepted_draft_ends_the_output_and_the_session_holds_it() -> None:
    target = reference(PROMPT, 16)
    stop = target[5]
    expected = target[: target.index(stop) + 1]

    async def scenario() -> tuple[list[Generated], object, object]:
        async with serving() as server:
            client, _ = await opened(server)
            parts, reply = await _proposing(server, client, _oracle(target), 16, stops=(stop,))
            after = await client.verify(stop, DraftTree.chain([]))  # the stop is the next root, as after plain
            return parts, reply, after

    parts, reply, after = run(scenario())

    assert _tokens(parts, reply) == expected
    assert isinstance(reply, Generated) and reply.done and reply.committed == ROOT_INDEX + len(expected)
    assert isinstance(after, Verified) and after.next_token == reference(PROMPT, len(expected) + 1)[-1]


def test_max_new_tokens_counts_tokens_not_steps_and_the_context_limit_holds() -> None:
    target = reference(PROMPT, 16)

    async def scenario() -> tuple[object, object]:
        async with serving() as server:
            client, _ = await opened(server)
            budget = await _proposing(server, client, _oracle(target), 7)
        async with serving(max_context=len(PROMPT) + 3) as server:
            client, _ = await opened(server)
            full = await _proposing(server, client, _oracle(target), 50)
        return budget, full

    (parts, reply), (full_parts, full_reply) = run(scenario())  # type: ignore[misc]

    assert _tokens(parts, reply) == target[:7]
    assert _tokens(full_parts, full_reply) == target[:4] and full_reply.committed == len(PROMPT) + 3


def test_a_propose_for_a_request_that_is_not_a_proposing_generate_is_ignored() -> None:
    target = reference(PROMPT, 8)

    async def scenario() -> tuple[list[Generated], object]:
        async with serving() as server:
            client, _ = await opened(server)
            await client.send(Propose.of(999, ROOT_INDEX, DraftTree.chain(target)))  # never sent
            assert isinstance(await client.prefill(PROMPT[:-1]), Prefilled)  # no Error came first
            plain = Generate(
                client.protocol.new_request_id(), PROMPT[-1], 8, torch.tensor([], dtype=torch.int64), GREEDY
            )
            await client.send(plain)
            await client.send(Propose.of(plain.request_id, ROOT_INDEX, DraftTree.chain(target)))  # not proposing
            parts: list[Generated] = []
            return parts, await client.answer(plain, parts)

    parts, reply = run(scenario())

    assert _tokens(parts, reply) == target
    assert all(not p.drafted and not p.activations for p in [*parts, reply])  # type: ignore[attr-defined]


def test_a_server_without_propose_says_so_and_refuses_a_proposing_generate_naming_the_flag() -> None:
    target = reference(PROMPT, 4)

    async def scenario() -> tuple[bool, object, object]:
        async with serving(propose=False) as server:
            client, welcome = await opened(server)
            assert isinstance(await client.prefill(PROMPT[:-1]), Prefilled)
            stops = torch.tensor([], dtype=torch.int64)
            proposing = Generate(client.protocol.new_request_id(), PROMPT[-1], 4, stops, GREEDY, propose=True)
            await client.send(proposing)
            await client.send(Propose.of(proposing.request_id, ROOT_INDEX, DraftTree.chain(target)))
            refused = await client.answer(proposing, [])
            return welcome.capabilities.propose, refused, await client.generate(PROMPT[-1], 4)

    announced, refused, (parts, plain) = run(scenario())  # type: ignore[misc]

    assert not announced
    assert isinstance(refused, Error) and refused.code is ErrorCode.BAD_FRAME and not refused.fatal
    assert "--no-propose" in refused.message and "propose=False" in refused.message
    assert _tokens(parts, plain) == target  # the session goes on: a plain Generate is served


def _malformed(proposal: Propose) -> bytes:
    """``proposal``'s frame with its base a string."""
    frame = encode(proposal)
    (length,) = struct.unpack_from(">I", frame, 4)
    header = json.loads(frame[PREFIX_BYTES : PREFIX_BYTES + length])
    header["base"] = "twelve"
    raw = json.dumps(header).encode()
    return frame[:4] + struct.pack(">I", len(raw)) + raw + frame[PREFIX_BYTES + length :]


def _bad(request_id: int, tokens: list[int]) -> bytes:
    return _malformed(Propose.of(request_id, ROOT_INDEX, DraftTree.chain(tokens)))


def test_a_malformed_propose_fails_its_generate_with_an_error_naming_the_field() -> None:
    target = reference(PROMPT, 8)

    async def scenario() -> tuple[object, object]:
        async with serving() as server:
            client, _ = await opened(server)
            _, reply = await _proposing(server, client, lambda request_id: [_bad(request_id, target)], 400)
            return reply, await client.generate(PROMPT[-1], 4)

    reply, (_, after) = run(scenario())  # type: ignore[misc]

    assert isinstance(reply, Error) and reply.code is ErrorCode.BAD_FRAME and not reply.fatal
    assert "propose.base" in reply.message
    assert isinstance(after, Generated)  # the session goes on


def test_a_seeded_sampled_proposing_generation_is_a_valid_run_of_the_target() -> None:
    sampling = SamplingConfig(temperature=1.0, seed=11)
    target = reference(PROMPT, 12)

    async def scenario() -> tuple[list[Generated], object]:
        async with serving() as server:
            client, _ = await opened(server)
            return await _proposing(server, client, _oracle(target), 12, sampling=sampling)

    parts, reply = run(scenario())

    tokens = _tokens(parts, reply)
    assert len(tokens) == 12 and all(0 <= t < RUNNER.fingerprint.vocab_size for t in tokens)
    assert [p.committed for p in [*parts, reply]][-1] == ROOT_INDEX + 12  # type: ignore[attr-defined]


def test_decoded_parts_read_back_with_their_activations() -> None:
    part = Generated(3, torch.tensor([4, 5]), 9, False, drafted=1, activations={"hidden:1": torch.ones(2, 4)})

    back = decode(encode(part), Limits())

    assert isinstance(back, Generated) and back.drafted == 1 and back.activations["hidden:1"].shape == (2, 4)


def test_a_cancelled_proposing_generate_ends_within_a_step_and_the_session_continues() -> None:
    target = reference(PROMPT, 40)

    async def scenario() -> tuple[list[Generated], object, object]:
        async with serving(SlowBackend(), max_tree=2) as server:  # 3 tokens a step, each step slowed
            client, _ = await opened(server)
            parts: list[Generated] = []

            async def cancel_after_two(part: Generated) -> None:
                if len(parts) == 2:
                    await client.send(Cancel(part.request_id))

            prefill = Prefill(client.protocol.new_request_id(), torch.tensor(PROMPT[:-1]))
            stops = torch.empty(0, dtype=torch.int64)
            request = Generate(client.protocol.new_request_id(), PROMPT[-1], 40, stops, GREEDY, propose=True)
            for message in (prefill, request, Propose.of(request.request_id, ROOT_INDEX, DraftTree.chain(target))):
                await client.send(message)
            assert isinstance(await client.answer(prefill), Prefilled)
            reply = await client.answer(request, parts, cancel_after_two)
            root = int(parts[-1].tokens[-1])
            return parts, reply, await client.verify(root, DraftTree.chain([]))

    parts, reply, more = run(scenario())

    tokens = [t for p in parts for t in p.tokens.tolist()]
    assert isinstance(reply, Generated) and reply.cancelled and reply.tokens.numel() == 0
    assert tokens == target[: len(tokens)] and len(tokens) < 40
    assert reply.committed == ROOT_INDEX + len(tokens)  # everything streamed but the newest token, the next root
    assert isinstance(more, Verified) and more.next_token == target[len(tokens)]
