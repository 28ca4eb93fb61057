"""Speculative streaming on the wire (protocol 6): Propose, Generate.propose, Generated.drafted / activations."""

from __future__ import annotations

import json
import struct

import pytest
import torch

from drafts.errors import ErrorCode, ProtocolError
from drafts.protocol.codec import PREFIX_BYTES, Limits, decode, encode
from drafts.protocol.messages import Capabilities, Error, Generate, Generated, Propose
from drafts.protocol.state import FrameRejected, ServerProtocol, SessionState, Streamed
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from tests.drafts.protocol.examples import (
    assert_same,
    edited_frame,
    open_session,
    propose,
    sparse_propose,
    welcome,
)


def _refused(frame: bytes, limits: Limits | None = None) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        decode(frame, limits or Limits())
    return caught.value


def test_a_sparse_proposal_reads_back_as_the_tree_it_was_built_from() -> None:
    message = sparse_propose()

    back = decode(encode(message), Limits())

    assert isinstance(back, Propose)
    assert back.tree.tokens == (3, 9, 1) and back.tree.parents == (0, 0, 1)
    assert back.tree.q_sparse is not None and torch.equal(back.tree.q_sparse.weights, message.q_weights)


def test_a_frame_without_the_fields_protocol_6_added_reads_as_plain_streaming() -> None:
    generate = Generate(3, 4, 8, torch.tensor([2]), SamplingConfig())
    generated = Generated(3, torch.tensor([9]), 5, done=False)

    old_generate = decode(edited_frame(encode(generate), {"propose": None}), Limits())
    old_generated = decode(edited_frame(encode(generated), {"drafted": None}), Limits())

    assert isinstance(old_generate, Generate) and old_generate.propose is False
    assert isinstance(old_generated, Generated) and old_generated.drafted == 0 and not old_generated.activations


def test_capabilities_say_whether_the_server_takes_proposals() -> None:
    caps = Capabilities(2048, 64, 2**20, "float16", False, "cpu", propose=True)

    back = decode(encode(welcome(capabilities=caps)), Limits())

    assert back.capabilities.propose is True  # type: ignore[union-attr]
    assert Capabilities(2048, 64, 2**20, "float16", False).propose is False


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        ({"base": "12"}, "propose.base must be an int"),
        ({"base": -1}, "propose.base must be an int"),
        ({"base": None}, "propose has no field 'base'"),
        ({"sampling": {}}, "propose has unexpected field"),
    ],
)
def test_a_malformed_propose_header_is_refused_naming_the_field_and_its_generate(
    edit: dict[str, object], match: str
) -> None:
    error = _refused(edited_frame(encode(propose(request_id=7)), edit))

    assert error.code is ErrorCode.BAD_FRAME
    assert error.request_id == 7  # the Generate the proposal was for: the Error answers it
    assert match in str(error)


def test_a_propose_with_parents_after_their_children_is_refused() -> None:
    frame = encode(propose())  # tensors: tokens (3 x int64), parents (3 x int64), q
    (length,) = struct.unpack_from(">I", frame, 4)
    body = bytearray(frame)
    tensors = PREFIX_BYTES + length
    body[tensors + 24 + 8 : tensors + 24 + 16] = struct.pack("<q", 2)  # parents[1] = 2 > 1

    error = _refused(bytes(body))

    assert error.code is ErrorCode.BAD_FRAME and "propose.parents[i] must be in [0, i]" in str(error)


def test_a_propose_missing_its_parents_is_refused() -> None:
    message = Propose(7, 0, torch.tensor([5]), torch.tensor([0]))
    frame = encode(message)
    (length,) = struct.unpack_from(">I", frame, 4)
    header = json.loads(frame[PREFIX_BYTES : PREFIX_BYTES + length])
    header["tensors"] = header["tensors"][:1]
    raw = json.dumps(header).encode()
    cut = frame[:4] + struct.pack(">I", len(raw)) + raw + frame[PREFIX_BYTES + length : PREFIX_BYTES + length + 8]

    error = _refused(cut)

    assert "propose has no tensor 'parents'" in str(error)


def test_a_proposal_over_the_node_limit_is_too_large() -> None:
    error = _refused(encode(propose(nodes=5)), Limits(max_proposal_nodes=4))

    assert error.code is ErrorCode.TREE_TOO_LARGE and error.request_id == 7
    assert "over this end's limit of 4" in str(error)


def test_a_proposal_larger_than_a_verify_may_be_is_accepted() -> None:
    message = Propose.of(7, 0, DraftTree.chain(list(range(1, 41))))

    back = decode(encode(message), Limits(max_tree_nodes=8))

    assert isinstance(back, Propose) and back.tokens.numel() == 40


def test_a_sparse_proposal_whose_token_is_not_among_its_kept_ids_is_refused() -> None:
    message = sparse_propose()
    frame = encode(message)
    (length,) = struct.unpack_from(">I", frame, 4)
    body = bytearray(frame)
    body[PREFIX_BYTES + length : PREFIX_BYTES + length + 8] = struct.pack("<q", 8)  # tokens[0] = 8, not in [3, 5]

    error = _refused(bytes(body))

    assert error.code is ErrorCode.BAD_FRAME and "not among its q_indices" in str(error)


def test_the_server_takes_a_propose_at_once_and_the_client_does_not_wait_for_a_reply() -> None:
    client, server = open_session()
    generate = Generate(client.new_request_id(), 4, 8, torch.tensor([2]), SamplingConfig(), propose=True)
    server.receive(client.send(generate))

    [received] = server.receive(client.send(propose(request_id=generate.request_id)))

    assert isinstance(received, Propose) and received.request_id == generate.request_id
    assert list(client.in_flight) == [generate.request_id]  # still only the Generate
    part = Generated(
        generate.request_id, torch.tensor([5, 6]), 7, False, drafted=1, activations={"m": torch.ones(2, 3)}
    )
    [streamed] = client.receive(server.send(part))
    assert isinstance(streamed, Streamed)
    assert_same(streamed.part, part)


def test_a_malformed_propose_is_refused_with_the_request_id_of_its_generate_and_the_session_goes_on() -> None:
    client, server = open_session()
    frame = edited_frame(encode(propose(request_id=5)), {"base": "x"})

    [event] = server.receive(frame)

    assert isinstance(event, FrameRejected)
    assert isinstance(event.error, Error) and event.error.request_id == 5 and not event.error.fatal
    assert server.state is SessionState.OPEN


def test_a_propose_before_the_session_is_open_is_fatal() -> None:
    server = ServerProtocol()

    [event] = server.receive(encode(propose()))

    assert isinstance(event, FrameRejected) and event.error.fatal and server.state is SessionState.CLOSED
