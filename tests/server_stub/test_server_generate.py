"""moa-server's plain decoding (Generate): the target alone, one streamed part per token."""

from __future__ import annotations

from drafts.errors import ErrorCode
from drafts.protocol import Error, Generated, Prefilled
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from tests.server_stub.serving import PROMPT, opened, reference, run, serving


def test_generate_streams_the_targets_greedy_tokens_one_part_each_and_commits_them() -> None:
    async def scenario() -> tuple[list[Generated], object, object]:
        async with serving() as server:
            client, _ = await opened(server)
            assert isinstance(await client.prefill(PROMPT[:-1]), Prefilled)
            parts, reply = await client.generate(PROMPT[-1], 12)
            assert isinstance(reply, Generated)
            after = await client.verify(int(reply.tokens[-1]), DraftTree.chain([]))
            return parts, reply, after

    parts, reply, after = run(scenario())

    assert isinstance(reply, Generated) and reply.done and not any(p.done for p in parts)
    tokens = [t for p in [*parts, reply] for t in p.tokens.tolist()]
    assert tokens == reference(PROMPT, 12) and all(p.tokens.numel() == 1 for p in parts)
    assert [p.committed for p in [*parts, reply]] == list(range(len(PROMPT), len(PROMPT) + 12))
    assert not isinstance(after, Error)  # the session holds the output: the next round continues from it


def test_generate_stops_at_a_stop_token_and_includes_it() -> None:
    target = reference(PROMPT, 12)

    async def scenario() -> tuple[list[Generated], object]:
        async with serving() as server:
            client, _ = await opened(server)
            await client.prefill(PROMPT[:-1])
            return await client.generate(PROMPT[-1], 12, stops=(target[4],))

    parts, reply = run(scenario())

    assert isinstance(reply, Generated)
    assert [t for p in [*parts, reply] for t in p.tokens.tolist()] == target[: target.index(target[4]) + 1]


def test_generate_ends_when_the_context_is_full() -> None:
    async def scenario() -> tuple[list[Generated], object]:
        async with serving(max_context=len(PROMPT) + 3) as server:
            client, _ = await opened(server)
            await client.prefill(PROMPT[:-1])
            return await client.generate(PROMPT[-1], 50)

    parts, reply = run(scenario())

    assert isinstance(reply, Generated) and reply.done and reply.committed == len(PROMPT) + 3
    assert len(parts) + 1 == 4  # one token per committed position, the last one the next root


def test_a_seeded_sampled_generation_repeats_and_a_bad_request_gets_an_error_reply() -> None:
    sampling = SamplingConfig(temperature=1.0, seed=7)

    async def scenario() -> tuple[list[int], list[int], object]:
        async with serving() as server:
            outputs = []
            for _ in range(2):
                client, _ = await opened(server)
                await client.prefill(PROMPT[:-1])
                parts, reply = await client.generate(PROMPT[-1], 8, sampling=sampling)
                outputs.append([t for p in [*parts, reply] for t in p.tokens.tolist()])
            _, refused = await client.generate(10**9, 4)  # a root token outside the vocabulary
            return outputs[0], outputs[1], refused

    first, second, refused = run(scenario())

    assert first == second and len(first) == 8
    assert isinstance(refused, Error) and not refused.fatal and refused.code is not ErrorCode.INTERNAL
