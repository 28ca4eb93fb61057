from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch

from drafts.errors import ErrorCode, MalformedFrameError, UnexpectedMessageError
from drafts.protocol.codec import Limits, decode, encode
from drafts.protocol.messages import (
    PROTOCOL_VERSION,
    Bye,
    Cancel,
    Error,
    Generate,
    Generated,
    Prefill,
    Prefilled,
    Reply,
    Rewind,
    Rewound,
    Verified,
    Verify,
)
from drafts.protocol.state import Answered, ClientProtocol, FrameRejected, ServerProtocol, SessionState, Streamed
from drafts.sampling import SamplingConfig
from tests.drafts.protocol.examples import assert_same, hello, verified, verify, welcome


def _open_session(limits: Limits | None = None) -> tuple[ClientProtocol, ServerProtocol]:
    client, server = ClientProtocol(), ServerProtocol(limits)
    [received_hello] = server.receive(client.send(hello()))
    assert received_hello == server.hello == hello()
    [received_welcome] = client.receive(server.send(welcome()))
    assert received_welcome == client.welcome == welcome()
    return client, server


def _rejection(events: Sequence[object]) -> Error:
    [event] = events
    assert isinstance(event, FrameRejected)
    assert_same(event.error, _decoded_reply(event))
    return event.error


def _decoded_reply(event: FrameRejected) -> Error:
    reply = decode(event.reply, Limits())
    assert isinstance(reply, Error)
    return reply


# -- the happy path ------------------------------------------------------------------------------


def test_hello_then_welcome_opens_both_ends() -> None:
    client, server = _open_session()

    assert client.state is server.state is SessionState.OPEN


def test_every_request_is_answered_and_matched_to_its_reply() -> None:
    client, server = _open_session()
    prefill = Prefill(client.new_request_id(), torch.tensor([1, 2, 3]))
    tree = verify(request_id=client.new_request_id())
    rewind = Rewind(client.new_request_id(), 2)

    for request in (prefill, tree, rewind):  # pipelined: all three in flight at once
        [received] = server.receive(client.send(request))
        assert type(received) is type(request)
    assert sorted(client.in_flight) == [1, 2, 3]
    replies: list[Reply] = [Rewound(3, 2), verified(request_id=2), Prefilled(1, 3)]  # answered in any order
    events = [event for reply in replies for event in client.receive(server.send(reply))]

    assert [(e.request, type(e.reply)) for e in events if isinstance(e, Answered)] == [
        (rewind, Rewound),
        (tree, Verified),
        (prefill, Prefilled),
    ]
    assert client.in_flight == {}


def test_a_generate_streams_parts_and_its_done_part_answers_it() -> None:
    client, server = _open_session()
    generate = Generate(client.new_request_id(), 5, 3, torch.tensor([0]), SamplingConfig())
    [received] = server.receive(client.send(generate))
    assert isinstance(received, Generate)
    parts = [Generated(1, torch.tensor([t]), 10 + i, done=False) for i, t in enumerate((7, 8))]
    parts.append(Generated(1, torch.tensor([0]), 12, done=True))

    events = [event for part in parts for event in client.receive(server.send(part))]

    assert [type(e) for e in events] == [Streamed, Streamed, Answered]
    assert [e.part.tokens.tolist() for e in events if isinstance(e, Streamed)] == [[7], [8]]
    assert client.in_flight == {}


def test_a_generated_part_after_the_done_part_closes_the_client() -> None:
    client, server = _open_session()
    client.send(Generate(client.new_request_id(), 5, 1, torch.tensor([0]), SamplingConfig()))
    client.receive(server.send(Generated(1, torch.tensor([3]), 6, done=True)))

    error = _rejection(client.receive(server.send(Generated(1, torch.tensor([4]), 7, done=False))))

    assert error.fatal and client.state is SessionState.CLOSED


def test_bye_closes_both_ends() -> None:
    client, server = _open_session()

    [event] = server.receive(client.send(Bye()))

    assert isinstance(event, Bye)
    assert client.state is server.state is SessionState.CLOSED


def test_new_request_ids_are_never_reused() -> None:
    client = ClientProtocol()

    assert len({client.new_request_id() for _ in range(100)}) == 100


# -- the server refusing input -------------------------------------------------------------------


def test_a_request_before_hello_is_a_fatal_error_and_later_input_is_ignored() -> None:
    server = ServerProtocol()

    error = _rejection(server.receive(encode(Rewind(1, 0))))

    assert (error.code, error.fatal, error.request_id) == (ErrorCode.UNEXPECTED_MESSAGE, True, 1)
    assert "follow the order hello -> welcome" in error.message
    assert server.state is SessionState.CLOSED
    assert server.receive(encode(hello())) == []


def test_a_request_before_the_welcome_is_sent_is_fatal() -> None:
    server = ServerProtocol()
    server.receive(encode(hello()))

    assert _rejection(server.receive(encode(Rewind(1, 0)))).fatal
    assert server.state is SessionState.CLOSED


def test_a_hello_of_another_protocol_version_is_fatal() -> None:
    server = ServerProtocol()

    error = _rejection(server.receive(encode(hello(protocol_version=99))))

    assert (error.code, error.fatal) == (ErrorCode.UNSUPPORTED_VERSION, True)
    assert server.hello is None and server.state is SessionState.CLOSED


def test_garbage_before_hello_is_fatal() -> None:
    server = ServerProtocol()

    error = _rejection(server.receive(b"\x00" * 40))

    assert (error.code, error.fatal) == (ErrorCode.BAD_FRAME, True)


def test_once_open_a_bad_frame_or_a_second_hello_costs_one_error_not_the_session() -> None:
    client, server = _open_session()

    for data in (b"MOA\x01garbage", encode(hello()), encode(welcome())):
        error = _rejection(server.receive(data))
        assert not error.fatal
    assert server.state is SessionState.OPEN
    assert len(server.receive(client.send(Rewind(client.new_request_id(), 0)))) == 1


def test_a_tree_too_large_is_refused_with_its_request_id_and_the_client_matches_the_refusal() -> None:
    client, server = _open_session(Limits(max_tree_nodes=2))
    request = verify(request_id=client.new_request_id(), nodes=3)

    refusal = _rejection(server.receive(client.send(request)))
    [answered] = client.receive(server.send(refusal))

    assert (refusal.code, refusal.fatal) == (ErrorCode.TREE_TOO_LARGE, False)
    assert isinstance(answered, Answered) and answered.request is request and answered.reply == refusal
    assert client.state is server.state is SessionState.OPEN and client.in_flight == {}


def test_the_host_refusing_a_hello_closes_both_ends() -> None:
    client, server = ClientProtocol(), ServerProtocol()
    server.receive(client.send(hello()))
    mismatch = Error(None, ErrorCode.TARGET_MISMATCH, "this server runs gemma-3-270m; use a gemma draft", True)

    [event] = client.receive(server.send(mismatch))

    assert event == mismatch
    assert client.state is server.state is SessionState.CLOSED


def test_a_fatal_error_from_the_client_closes_the_server() -> None:
    _, server = _open_session()

    [event] = server.receive(encode(Error(None, ErrorCode.BAD_FRAME, "bad reply", fatal=True)))

    assert isinstance(event, Error) and server.state is SessionState.CLOSED


# -- the client refusing input -------------------------------------------------------------------


def test_a_reply_to_a_request_not_in_flight_closes_the_client() -> None:
    client, server = _open_session()

    error = _rejection(client.receive(server.send(Rewound(41, 0))))

    assert (error.code, error.fatal) == (ErrorCode.UNEXPECTED_MESSAGE, True)
    assert "not in flight" in error.message
    assert client.state is SessionState.CLOSED


def test_a_reply_of_the_wrong_kind_closes_the_client() -> None:
    client, server = _open_session()
    client.send(Rewind(client.new_request_id(), 0))

    _rejection(client.receive(server.send(Prefilled(1, 0))))

    assert client.state is SessionState.CLOSED
    assert list(client.in_flight) == [1]  # what was lost stays visible to the host


def test_a_welcome_of_another_protocol_version_closes_the_client() -> None:
    client = ClientProtocol()
    client.send(hello())

    error = _rejection(client.receive(encode(welcome(protocol_version=PROTOCOL_VERSION + 1))))

    assert error.code is ErrorCode.UNSUPPORTED_VERSION and client.state is SessionState.CLOSED


def test_a_fatal_error_in_reply_to_a_request_closes_the_client() -> None:
    client, server = _open_session()
    request = Rewind(client.new_request_id(), 0)
    server.receive(client.send(request))

    [answered] = client.receive(server.send(Error(request.request_id, ErrorCode.INTERNAL, "restarting", True)))

    assert isinstance(answered, Answered) and answered.request is request
    assert client.state is server.state is SessionState.CLOSED


# -- the host breaking the order is a bug, raised --------------------------------------------------


def test_the_client_cannot_send_requests_before_the_session_is_open() -> None:
    client = ClientProtocol()

    with pytest.raises(UnexpectedMessageError, match="sent rewind while the session is awaiting hello"):
        client.send(Rewind(1, 0))


def test_the_client_cannot_reuse_a_request_id_in_flight() -> None:
    client, _ = _open_session()
    client.send(Rewind(1, 0))

    with pytest.raises(UnexpectedMessageError, match="still in flight"):
        client.send(Verify.of(1, 0, verify().tree, verify().sampling))


def test_the_server_cannot_reply_before_welcoming() -> None:
    server = ServerProtocol()
    server.receive(encode(hello()))

    with pytest.raises(UnexpectedMessageError):
        server.send(Rewound(1, 0))


def test_nothing_can_be_sent_on_a_closed_session() -> None:
    client, server = _open_session()
    server.receive(client.send(Bye()))

    with pytest.raises(UnexpectedMessageError):
        client.send(Bye())
    with pytest.raises(UnexpectedMessageError, match="closed"):
        server.send(Rewound(1, 0))


# -- cancel (protocol version 3) -----------------------------------------------------------------


def test_a_cancel_reaches_the_server_host_and_leaves_the_request_in_flight_until_its_reply() -> None:
    client, server = _open_session()
    generate = Generate(client.new_request_id(), 5, 100, torch.empty(0, dtype=torch.int64), SamplingConfig())
    server.receive(client.send(generate))

    [cancel] = server.receive(client.send(Cancel(generate.request_id)))
    assert cancel == Cancel(generate.request_id) and generate.request_id in client.in_flight
    done = Generated(generate.request_id, torch.empty(0, dtype=torch.int64), 9, done=True, cancelled=True)
    [answered] = client.receive(server.send(done))

    assert isinstance(answered, Answered) and answered.request is generate
    assert isinstance(answered.reply, Generated) and answered.reply.cancelled and not client.in_flight
    assert client.state is server.state is SessionState.OPEN


def test_a_cancel_of_a_request_already_answered_is_sent_without_complaint() -> None:
    client, server = _open_session()

    [cancel] = server.receive(client.send(Cancel(41)))

    assert cancel == Cancel(41) and client.state is server.state is SessionState.OPEN


def test_a_cancel_before_the_session_is_open_is_fatal() -> None:
    server = ServerProtocol()

    error = _rejection(server.receive(encode(Cancel(1))))

    assert error.fatal and error.code is ErrorCode.UNEXPECTED_MESSAGE and server.state is SessionState.CLOSED


def test_a_malformed_cancel_is_refused_without_answering_the_request_it_names() -> None:
    client, server = _open_session()
    frame = encode(Cancel(3)).replace(b'"request_id":3', b'"request_id":3,"extra":1')

    error = _rejection(server.receive(frame))

    assert error.request_id is None and not error.fatal and error.code is ErrorCode.BAD_FRAME


def test_a_cancelled_part_must_be_the_done_part_and_carry_no_token() -> None:
    with pytest.raises(MalformedFrameError, match="cancelled"):
        Generated(1, torch.tensor([3]), 4, done=True, cancelled=True)
    with pytest.raises(MalformedFrameError, match="cancelled"):
        Generated(1, torch.empty(0, dtype=torch.int64), 4, done=False, cancelled=True)


def test_a_text_frame_is_refused_even_when_its_bytes_form_a_valid_frame() -> None:
    client, server = _open_session()
    text = encode(Prefill(client.new_request_id(), torch.tensor([1, 2]))).decode("latin-1")

    error = _rejection(server.receive(text))

    assert error.code is ErrorCode.BAD_FRAME and "text frame" in error.message and not error.fatal


def test_a_client_of_the_version_before_cancel_is_refused_with_both_versions_named() -> None:
    server = ServerProtocol()

    error = _rejection(server.receive(encode(hello(protocol_version=2))))

    assert error.fatal and error.code is ErrorCode.UNSUPPORTED_VERSION
    assert "version 2" in error.message and str(PROTOCOL_VERSION) in error.message and PROTOCOL_VERSION > 2
