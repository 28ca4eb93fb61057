"""Hostile input: random bytes, mutated frames and mutated headers never escape as anything but ProtocolError."""

from __future__ import annotations

import json
import struct
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drafts.errors import ProtocolError
from drafts.protocol.codec import PREFIX_BYTES, Limits, decode, encode
from drafts.protocol.messages import Message
from drafts.protocol.state import ClientProtocol, FrameRejected, ServerProtocol, SessionState
from tests.drafts.protocol.examples import hello, one_of_each, welcome

FRAMES = [encode(message) for message in one_of_each()]
LIMITS = Limits(max_frame_bytes=4096, max_tensor_elements=1024)  # small, so hostile sizes trip them quickly
FUZZ = settings(max_examples=150, deadline=500, database=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    """A valid frame, then bit flips, truncation, splicing or byte insertion."""
    data = bytearray(draw(st.sampled_from(FRAMES)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "splice", "insert"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[at:]
        elif kind == "splice":
            other = draw(st.sampled_from(FRAMES))
            data[at:] = other[draw(st.integers(0, len(other))) :]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def mutated_headers(draw: st.DrawFn) -> bytes:
    """A valid frame whose JSON header has one field (or one tensor-entry field) replaced by a random value."""
    frame = draw(st.sampled_from(FRAMES))
    (length,) = struct.unpack_from(">I", frame, 4)
    header: dict[str, Any] = json.loads(frame[PREFIX_BYTES : PREFIX_BYTES + length])
    target = header
    if header["tensors"] and draw(st.booleans()):
        target = draw(st.sampled_from(header["tensors"]))
    key = draw(st.sampled_from([*target, "extra"]))
    target[key] = draw(JSON)
    raw = json.dumps(header).encode()  # NaN/Infinity may appear: the codec must refuse them
    return frame[:4] + struct.pack(">I", len(raw)) + raw + frame[PREFIX_BYTES + length :]


HOSTILE = st.binary(max_size=256) | mutated_frames() | mutated_headers()


def _decodes_or_refuses(data: bytes) -> Message | None:
    try:
        return decode(data, LIMITS)
    except ProtocolError:
        return None


@FUZZ
@given(HOSTILE)
def test_decode_raises_nothing_but_protocol_errors(data: bytes) -> None:
    message = _decodes_or_refuses(data)

    if message is not None:  # whatever got through is a valid message: it encodes again
        assert decode(encode(message), LIMITS).TYPE is message.TYPE


def _check_session(session: ServerProtocol | ClientProtocol, data: bytes) -> None:
    events = session.receive(data)  # must not raise

    assert len(events) <= 1
    for event in events:
        if isinstance(event, FrameRejected):
            assert session.state is SessionState.CLOSED or not event.error.fatal
            assert event.error.message
            assert decode(event.reply, Limits()).TYPE is event.error.TYPE


@FUZZ
@given(st.lists(HOSTILE, min_size=1, max_size=3), st.booleans())
def test_the_server_never_raises_on_hostile_input(frames: list[bytes], open_first: bool) -> None:
    server = ServerProtocol(LIMITS)
    if open_first:
        server.receive(encode(hello()))
        server.send(welcome())
    for data in frames:
        _check_session(server, data)


@FUZZ
@given(st.lists(HOSTILE, min_size=1, max_size=3))
def test_the_client_never_raises_on_hostile_input(frames: list[bytes]) -> None:
    client = ClientProtocol(LIMITS)
    client.send(hello())
    for data in frames:
        _check_session(client, data)
