"""Welcome's capabilities.device_kind: it survives the codec, and a Welcome without it reads as None."""

from __future__ import annotations

import dataclasses
import json
import struct

import pytest

from drafts.errors import MalformedFrameError
from drafts.protocol.codec import PREFIX_BYTES, Limits, decode, encode
from drafts.protocol.messages import Welcome
from tests.drafts.protocol.examples import welcome

LIMITS = Limits()


def _with_device(kind: str | None) -> Welcome:
    base = welcome()
    return dataclasses.replace(base, capabilities=dataclasses.replace(base.capabilities, device_kind=kind))


def _without_field(frame: bytes) -> bytes:
    """``frame`` as a server that predates the field sends it: no device_kind key at all."""
    magic, version, length = struct.unpack(">3sBI", frame[:PREFIX_BYTES])
    header = json.loads(frame[PREFIX_BYTES : PREFIX_BYTES + length])
    del header["capabilities"]["device_kind"]
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return struct.pack(">3sBI", magic, version, len(raw)) + raw + frame[PREFIX_BYTES + length :]


@pytest.mark.parametrize("kind", ["cpu", "cuda", "mps", None])
def test_device_kind_survives_a_round_trip(kind: str | None) -> None:
    decoded = decode(encode(_with_device(kind)), LIMITS)

    assert isinstance(decoded, Welcome) and decoded.capabilities.device_kind == kind
    assert decoded == _with_device(kind)


def test_a_welcome_without_device_kind_decodes_as_unsaid() -> None:
    frame = _without_field(encode(_with_device("cuda")))

    assert b"device_kind" not in frame
    decoded = decode(frame, LIMITS)
    assert isinstance(decoded, Welcome) and decoded.capabilities.device_kind is None


def test_an_empty_device_kind_is_refused() -> None:
    with pytest.raises(MalformedFrameError, match="device_kind"):
        _with_device("")
