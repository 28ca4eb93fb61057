"""Vectors later on the wire (protocol 7): Prefill.later, Fetch / Fetched, Capabilities.later."""

from __future__ import annotations

import json

import pytest
import torch

from drafts.errors import MalformedFrameError, ProtocolError
from drafts.protocol.codec import Limits, decode, encode
from drafts.protocol.messages import Capabilities, Fetch, Fetched, Prefill, Prefilled
from drafts.protocol.state import Answered, FrameRejected
from tests.drafts.protocol.examples import edited_frame, open_session, welcome


def test_a_fetch_and_its_reply_read_back_as_sent() -> None:
    rows = torch.randn(4, 6).half()

    fetch = decode(encode(Fetch(5, 12, 4)), Limits())
    fetched = decode(encode(Fetched(5, 12, {"memory": rows})), Limits())

    assert isinstance(fetch, Fetch) and (fetch.request_id, fetch.start, fetch.length) == (5, 12, 4)
    assert isinstance(fetched, Fetched) and fetched.start == 12 and torch.equal(fetched.activations["memory"], rows)


def test_a_frame_without_the_fields_protocol_7_added_reads_as_a_plain_prefill_and_no_capability() -> None:
    caps = Capabilities(2048, 64, 2**20, "float16", False, "cpu", propose=True, later=True)
    older_caps = {k: v for k, v in json.loads(json.dumps(caps.__dict__)).items() if k != "later"}

    prefill = decode(edited_frame(encode(Prefill(3, torch.tensor([1, 2]), later=True)), {"later": None}), Limits())
    older = decode(edited_frame(encode(welcome(capabilities=caps)), {"capabilities": older_caps}), Limits())

    assert isinstance(prefill, Prefill) and prefill.later is False
    assert isinstance(older, type(welcome())) and older.capabilities.later is False and older.capabilities.propose


@pytest.mark.parametrize(
    ("edit", "named"),
    [({"length": 0}, "fetch.length"), ({"start": -1}, "fetch.start"), ({"length": "4"}, "fetch.length")],
)
def test_a_bad_fetch_is_refused_with_an_error_that_names_the_field(edit: dict[str, object], named: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(edited_frame(encode(Fetch(5, 12, 4)), edit), Limits())

    assert named in str(caught.value) and caught.value.request_id == 5


def test_fetched_rows_must_agree_in_number() -> None:
    with pytest.raises(MalformedFrameError, match="rows"):
        Fetched(1, 0, {"memory": torch.zeros(3, 4), "hidden:2": torch.zeros(2, 4)})


def test_the_client_tracks_a_fetch_until_its_fetched_reply_and_the_server_lets_it_through() -> None:
    client, server = open_session()

    (event,) = server.receive(client.send(Fetch(4, 0, 2)))
    (answered,) = client.receive(server.send(Fetched(4, 0, {"memory": torch.zeros(2, 6)})))

    assert isinstance(event, Fetch)
    assert isinstance(answered, Answered) and isinstance(answered.reply, Fetched) and not client.in_flight


def test_a_prefilled_for_a_fetch_is_out_of_step_and_closes_the_client() -> None:
    client, server = open_session()
    client.send(Fetch(4, 0, 2))

    (rejected,) = client.receive(server.send(Prefilled(4, 2)))

    assert isinstance(rejected, FrameRejected) and rejected.error.fatal and "out of step" in rejected.error.message
