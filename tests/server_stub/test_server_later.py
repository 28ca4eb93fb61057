"""moa-server's vectors later (Prefill(later=True), Fetch): a loopback server, the tiny target."""

from __future__ import annotations

import pytest
import torch

from drafts.errors import ErrorCode
from drafts.protocol import Error, Fetch, Fetched, Generate, Generated, Needs, Prefill, Prefilled
from drafts.sampling import SamplingConfig
from tests.server_stub.remote_client import RemoteClient
from tests.server_stub.serving import PROMPT, opened, run, serving
from tests.server_stub.test_server_cancel import SlowBackend

HIDDEN = Needs(hidden_layers=(1,))  # computed by the prefill's forward, kept
KV = Needs(all_layer_kv=True)  # read from the cache when fetched (as a MoA draft's memory vectors)
NEEDS = pytest.mark.parametrize(("needs", "name"), [(HIDDEN, "hidden:1"), (KV, "kv")], ids=["kept", "from-kv"])


async def _prefill_later(client: RemoteClient, tokens: list[int]) -> Prefilled | Error:
    reply = await client.ask(Prefill(client.protocol.new_request_id(), torch.tensor(tokens), later=True))
    assert isinstance(reply, Prefilled | Error), reply
    return reply


async def _fetch(client: RemoteClient, start: int, length: int) -> Fetched | Error:
    request = Fetch(client.protocol.new_request_id(), start, length)
    await client.ws.send(client.protocol.send(request))
    reply = await client.answer(request)  # type: ignore[arg-type]  # a Fetch is a request like the others
    assert isinstance(reply, Fetched | Error), reply
    return reply


@NEEDS
def test_a_later_prefill_answers_without_vectors_and_its_fetched_rows_are_a_plain_prefills(
    needs: Needs, name: str
) -> None:
    async def scenario() -> tuple[Prefilled | Error, list[Fetched | Error], Prefilled]:
        async with serving() as server:
            later, _ = await opened(server, needs=needs)
            plain, _ = await opened(server, needs=needs)
            small = await _prefill_later(later, PROMPT)
            pieces = [await _fetch(later, 0, 7), await _fetch(later, 7, len(PROMPT) - 7)]
            reference = await plain.prefill(PROMPT)
            assert isinstance(reference, Prefilled)
            return small, pieces, reference

    small, pieces, reference = run(scenario())

    assert isinstance(small, Prefilled) and small.committed == len(PROMPT) and not small.activations
    assert all(isinstance(p, Fetched) for p in pieces) and [p.start for p in pieces] == [0, 7]  # type: ignore[union-attr]
    rows = torch.cat([p.activations[name] for p in pieces])  # type: ignore[union-attr]
    assert torch.equal(rows, reference.activations[name])


@NEEDS
def test_a_fetch_is_answered_while_a_generate_runs_ahead_of_it(needs: Needs, name: str) -> None:
    """The Fetch goes after the Generate's first part; its reply comes before the Generate's last."""

    async def scenario() -> list[str]:
        async with serving(SlowBackend()) as server:
            client, _ = await opened(server, needs=needs)
            assert isinstance(await _prefill_later(client, PROMPT[:-1]), Prefilled)
            stops = torch.empty(0, dtype=torch.int64)
            generate = Generate(client.protocol.new_request_id(), PROMPT[-1], 30, stops, SamplingConfig())
            await client.send(generate)
            order: list[str] = []
            fetch = Fetch(client.protocol.new_request_id(), 0, len(PROMPT) - 1)

            async def on_part(part: Generated) -> None:
                if not order:
                    await client.ws.send(client.protocol.send(fetch))
                order.append("part")

            while True:
                for event in await client._events():
                    reply = getattr(event, "reply", None)
                    part = getattr(event, "part", None)
                    if part is not None:
                        await on_part(part)
                    elif isinstance(reply, Fetched):
                        order.append("fetched")
                    elif isinstance(reply, Generated):
                        order.append("done")
                        return order

    order = run(scenario())

    assert "fetched" in order and order.index("fetched") < order.index("done")
    assert order.count("part") >= 1 and order[-1] == "done"


def test_a_fetch_of_rows_not_kept_is_refused_with_an_error_that_names_the_rows_kept() -> None:
    async def scenario() -> tuple[Fetched | Error, Fetched | Error, Fetched | Error, Fetched | Error]:
        async with serving() as server:
            client, _ = await opened(server, needs=HIDDEN)
            nothing = await _fetch(client, 0, 2)
            assert isinstance(await _prefill_later(client, PROMPT[:8]), Prefilled)
            assert isinstance(await _prefill_later(client, PROMPT[8:12]), Prefilled)  # replaces the rows kept
            outside = await _fetch(client, 4, 6)
            inside = await _fetch(client, 8, 4)  # the last piece frees them
            again = await _fetch(client, 8, 4)
            return nothing, outside, inside, again

    nothing, outside, inside, again = run(scenario())

    assert isinstance(nothing, Error) and nothing.code is ErrorCode.BAD_FRAME and not nothing.fatal
    assert "keeps no rows" in nothing.message and "later=true" in nothing.message
    assert isinstance(outside, Error) and "keeps rows 8..11" in outside.message
    assert isinstance(inside, Fetched) and inside.start == 8
    assert isinstance(again, Error) and "keeps no rows" in again.message


def test_a_rewind_into_the_kept_rows_drops_them() -> None:
    async def scenario() -> Fetched | Error:
        async with serving() as server:
            client, _ = await opened(server, needs=HIDDEN)
            assert isinstance(await _prefill_later(client, PROMPT), Prefilled)
            await client.rewind(5)
            return await _fetch(client, 0, 2)

    reply = run(scenario())

    assert isinstance(reply, Error) and "keeps no rows" in reply.message


def test_a_server_started_with_no_later_says_so_and_refuses_a_later_prefill_and_a_fetch() -> None:
    async def scenario() -> tuple[bool, Prefilled | Error, Fetched | Error, int]:
        async with serving(later=False) as server:
            client, welcome = await opened(server, needs=HIDDEN)
            refused = await _prefill_later(client, PROMPT)
            fetch = await _fetch(client, 0, 2)
            plain = await client.prefill(PROMPT)
            assert isinstance(plain, Prefilled)
            return welcome.capabilities.later, refused, fetch, plain.committed

    later, refused, fetch, committed = run(scenario())

    assert later is False and committed == len(PROMPT)  # the refused Prefill changed nothing
    assert isinstance(refused, Error) and refused.code is ErrorCode.BAD_FRAME and "--no-later" in refused.message
    assert isinstance(fetch, Error) and "--no-later" in fetch.message
