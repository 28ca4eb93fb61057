from __future__ import annotations

import json
import struct
import time
from typing import Any

import pytest
import torch

from drafts.errors import ConfigError, ErrorCode, ProtocolError
from drafts.protocol.codec import PREFIX_BYTES, Limits, decode, encode
from drafts.protocol.messages import Message, Prefill, Rewind, Timings, Verified
from drafts.protocol.tensors import quantize_int8
from tests.drafts.protocol.examples import assert_same, one_of_each, verify

LIMITS = Limits()


def _frame(header: Any, payload: bytes = b"", magic: bytes = b"MOA", version: int = 1) -> bytes:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack(">3sBI", magic, version, len(raw)) + raw + payload


def _parts(message: Message) -> tuple[dict[str, Any], bytes]:
    """(header object, tensor bytes) of a real frame, for tests that break one thing."""
    data = encode(message)
    (length,) = struct.unpack_from(">I", data, 4)
    return json.loads(data[PREFIX_BYTES : PREFIX_BYTES + length]), data[PREFIX_BYTES + length :]


def _refused(data: bytes, limits: Limits = LIMITS) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        decode(data, limits)
    return caught.value


@pytest.mark.parametrize("message", one_of_each(), ids=lambda m: m.TYPE.value)
def test_every_message_survives_a_round_trip_bit_for_bit(message: Message) -> None:
    data = encode(message)

    back = decode(data, LIMITS)

    assert_same(back, message)
    assert encode(back) == data


def test_a_frame_starts_with_magic_version_and_header_length() -> None:
    data = encode(Rewind(5, 3))

    assert data[:4] == b"MOA\x01"
    assert json.loads(data[8:]) == {"type": "rewind", "request_id": 5, "length": 3, "tensors": []}


def test_tensors_tile_the_payload_in_order() -> None:
    header, payload = _parts(verify())

    entries = header["tensors"]
    assert [e["name"] for e in entries] == ["tokens", "parents", "q"]
    assert [e["offset"] for e in entries] == [0, 24, 48]
    assert entries[2] == {"name": "q", "dtype": "bfloat16", "shape": [3, 16], "offset": 48, "nbytes": 96}
    assert len(payload) == 48 + 96


# -- malformed input -----------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [0, 3, 7, 8, 20, -1])
def test_a_truncated_frame_is_a_bad_frame(cut: int) -> None:
    data = encode(verify())

    assert _refused(data[:cut]).code is ErrorCode.BAD_FRAME


def test_a_frame_with_foreign_magic_is_a_bad_frame() -> None:
    error = _refused(b"GET / HTTP/1.1\r\n\r\n")

    assert error.code is ErrorCode.BAD_FRAME
    assert "not a moa-chat frame" in str(error)


def test_a_frame_of_another_wire_version_is_unsupported() -> None:
    error = _refused(_frame({"type": "bye", "tensors": []}, version=2))

    assert error.code is ErrorCode.UNSUPPORTED_VERSION
    assert "update moa-chat" in str(error)


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (b"{not json", "not UTF-8 JSON"),
        (b"\xff\xfe{}", "not UTF-8 JSON"),
        (b"[1, 2]", "must be a JSON object, got list"),
        (b'{"type": "bye", "type": "bye", "tensors": []}', "repeats a key"),
        (b'{"type": "rewind", "request_id": NaN, "length": 1, "tensors": []}', "must be finite"),
        (b"[" * 30_000 + b"]" * 30_000, "not UTF-8 JSON"),  # nesting deeper than the recursion limit
        (b'{"tensors": []}', "no field 'type'"),
        (b'{"type": "shutdown", "tensors": []}', "unknown message type 'shutdown'"),
        (b'{"type": "bye"}', "bye has no field 'tensors'"),
    ],
    ids=["not-json", "not-utf8", "list", "repeated-key", "nan", "deep", "no-type", "unknown-type", "no-tensors"],
)
def test_a_header_that_is_not_a_message_object_is_a_bad_frame(header: bytes, match: str) -> None:
    error = _refused(_frame(header))

    assert error.code is ErrorCode.BAD_FRAME
    assert match in str(error)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"length": None}, "rewind.length must be an int in [0, 2**53), got NoneType"),
        ({"length": "3"}, "rewind.length must be an int"),
        ({"length": True}, "rewind.length must be an int"),
        ({"length": 3.0}, "rewind.length must be an int"),
        ({"length": -1}, "rewind.length must be an int"),
        ({"length": 2**60}, "rewind.length must be an int"),
        ({"extra": 1}, "unexpected field(s) 'extra'"),
    ],
)
def test_a_missing_extra_or_mistyped_field_is_a_bad_frame(change: dict[str, Any], match: str) -> None:
    header, payload = _parts(Rewind(5, 3))
    header.update(change)

    error = _refused(_frame(header, payload))

    assert error.code is ErrorCode.BAD_FRAME
    assert match in str(error)
    assert error.request_id == 5  # the error reply can answer the request it came from


def test_a_missing_field_is_a_bad_frame() -> None:
    header, payload = _parts(Rewind(5, 3))
    del header["length"]

    assert "rewind has no field 'length'" in str(_refused(_frame(header, payload)))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"needs": {"hidden_layers": [1], "all_layer_kv": True}}, "hello.needs has no field 'compressed'"),
        ({"needs": {"hidden_layers": [1], "all_layer_kv": 1, "compressed": None}}, "all_layer_kv must be true"),
        ({"needs": [1]}, "hello.needs must be an object"),
        ({"target": {"num_layers": 30.5}}, "object of strings and ints"),
        ({"client": 7}, "hello.client must be a string"),
    ],
)
def test_nested_objects_are_checked_as_strictly_as_the_header(change: dict[str, Any], match: str) -> None:
    header, payload = _parts(one_of_each()[0])
    header.update(change)

    assert match in str(_refused(_frame(header, payload)))


def test_sampling_settings_out_of_range_are_a_bad_frame() -> None:
    header, payload = _parts(verify())
    header["sampling"]["top_p"] = 0.0

    error = _refused(_frame(header, payload))

    assert error.code is ErrorCode.BAD_FRAME
    assert "top_p must be in [1e-06, 1]" in str(error)


@pytest.mark.parametrize(
    ("field", "value"),
    [("temperature", 1e-300), ("temperature", 1e-45), ("top_p", 5e-324), ("temperature", 1e300), ("seed", 2**53)],
)
def test_sampling_settings_that_underflow_or_overflow_float32_are_a_bad_frame(field: str, value: float) -> None:
    header, payload = _parts(verify())
    header["sampling"][field] = value

    error = _refused(_frame(header, payload))

    assert error.code is ErrorCode.BAD_FRAME and field in str(error) and error.request_id == 1


def test_an_unknown_error_code_is_a_bad_frame() -> None:
    header: dict[str, Any] = {"type": "error", "request_id": None, "code": "TEAPOT", "message": "", "fatal": False}
    header["tensors"] = []

    assert "error.code 'TEAPOT' is unknown" in str(_refused(_frame(header)))


def _with_entry(index: int, **change: Any) -> tuple[dict[str, Any], bytes]:
    header, payload = _parts(verify())
    header["tensors"][index].update(change)
    return header, payload


@pytest.mark.parametrize(
    ("index", "change", "match"),
    [
        (0, {"dtype": "float64"}, "unknown tensor dtype 'float64'"),
        (0, {"shape": [-3]}, "ints >= 0"),
        (0, {"nbytes": 16}, "claims 16 bytes, its dtype and shape need 24"),
        (1, {"offset": 16}, "overlaps the tensor before it"),
        (1, {"offset": 32}, "leaves a gap"),
        (1, {"name": "tokens"}, "appears twice"),
        (1, {"name": "bad name!"}, "must be 1-64 of"),
        (2, {"shape": [3, 32], "nbytes": 192}, "out of bounds or truncated"),
        (2, {"shape": [3, 8], "nbytes": 48}, "48 trailing bytes"),
        (0, {"dtype": "float32", "shape": [6], "nbytes": 24}, "verify.tokens must be int64, got float32"),
        (1, {"name": "parent"}, "no tensor 'parents'"),
    ],
)
def test_a_bad_tensor_entry_is_a_bad_frame(index: int, change: dict[str, Any], match: str) -> None:
    error = _refused(_frame(*_with_entry(index, **change)))

    assert error.code is ErrorCode.BAD_FRAME
    assert match in str(error)


def test_a_tensor_entry_with_an_extra_key_is_a_bad_frame() -> None:
    assert "unexpected field(s) 'stride'" in str(_refused(_frame(*_with_entry(0, stride=[1]))))


def test_an_unexpected_tensor_is_a_bad_frame() -> None:
    header, payload = _parts(Prefill(1, torch.tensor([1, 2])))
    header["tensors"].append({"name": "q", "dtype": "uint8", "shape": [1], "offset": 16, "nbytes": 1})

    assert "unexpected tensor(s) 'q'" in str(_refused(_frame(header, payload + b"\x00")))


# -- limits --------------------------------------------------------------------------------------


def test_limits_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="max_tree_nodes must be > 0"):
        Limits(max_tree_nodes=0)


def test_a_frame_over_the_byte_limit_is_too_large() -> None:
    data = encode(verify())

    assert _refused(data, Limits(max_frame_bytes=len(data) - 1)).code is ErrorCode.TOO_LARGE


def test_a_header_over_its_limit_is_too_large_before_it_is_parsed() -> None:
    data = _frame(b"x" * 2000)  # not JSON: the limit must trip first

    assert _refused(data, Limits(max_header_bytes=1000)).code is ErrorCode.TOO_LARGE


def test_too_many_tensors_are_too_large() -> None:
    assert _refused(encode(verify()), Limits(max_tensors=2)).code is ErrorCode.TOO_LARGE


def test_a_header_claiming_a_trillion_elements_is_refused_without_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_allocation(*args: object, **kwargs: object) -> None:
        raise AssertionError("decode allocated a tensor for a frame it must refuse")

    for name in ("frombuffer", "empty", "zeros"):
        monkeypatch.setattr(torch, name, no_allocation)
    header, payload = _parts(Prefill(1, torch.tensor([1, 2])))
    header["tensors"][0].update(shape=[10**6, 10**6], nbytes=8 * 10**12)
    start = time.perf_counter()

    error = _refused(_frame(header, payload))

    assert error.code is ErrorCode.TOO_LARGE
    assert time.perf_counter() - start < 0.1


def test_a_tree_over_the_node_limit_is_too_large_and_names_its_request() -> None:
    error = _refused(encode(verify(request_id=8, nodes=5)), Limits(max_tree_nodes=4))

    assert error.code is ErrorCode.TREE_TOO_LARGE
    assert error.request_id == 8
    assert "draft smaller trees" in str(error)


# -- what the server/client split costs ------------------------------------------------------------


def _verified_frame(committed_tokens: int, activations: dict[str, torch.Tensor]) -> int:
    accepted = torch.arange(1, committed_tokens, dtype=torch.int64)  # the root is committed too
    return len(encode(Verified(7, accepted, 123, 1000, activations, Timings(1.5, 12.25))))


def _kv_float16(m: int) -> dict[str, torch.Tensor]:
    return {"kv": torch.randn(m, 30, 384).half()}  # SmolLM2: 30 layers x (3 KV heads x [K|V] x 64)


def _kv_int8(m: int) -> dict[str, torch.Tensor]:
    q, scale = quantize_int8(torch.randn(m, 30, 384))
    return {"kv": q, "kv.scale": scale}


def _memory(m: int) -> dict[str, torch.Tensor]:
    return {"memory": torch.randn(m, 576).half()}


def _nothing(m: int) -> dict[str, torch.Tensor]:
    return {}


@pytest.mark.parametrize(
    ("activations", "per_token", "frame_of_4"),
    [(_kv_float16, 23_040, 92_479), (_kv_int8, 11_640, 46_971), (_memory, 1_152, 4_927), (_nothing, 0, 229)],
)
def test_a_verified_frame_costs_the_bytes_per_token_the_codec_docstring_states(
    activations: Any, per_token: int, frame_of_4: int
) -> None:
    one, four = _verified_frame(1, activations(1)), _verified_frame(4, activations(4))

    assert 0 <= four - one - 3 * (per_token + 8) <= 2  # + 8 per accepted tree index; JSON offsets grow a digit
    assert four == frame_of_4
