from __future__ import annotations

import pytest
import torch

from drafts.errors import FrameTooLargeError, MalformedFrameError
from drafts.protocol.tensors import (
    WIRE_DTYPES,
    TensorSpec,
    byteswap,
    decode_tensor,
    dequantize_int8,
    encode_tensor,
    quantize_int8,
)


def _sample(dtype: torch.dtype) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.rand(3, 5, generator=gen) > 0.5
    if dtype.is_floating_point:
        x = torch.randn(3, 5, generator=gen).to(dtype)
        x[0, :4] = torch.tensor([float("nan"), float("inf"), -0.0, 1e-40]).to(dtype)
        return x
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, (3, 5), generator=gen, dtype=dtype)


@pytest.mark.parametrize("name", list(WIRE_DTYPES))
def test_every_wire_dtype_round_trips_bit_for_bit(name: str) -> None:
    x = _sample(WIRE_DTYPES[name])

    spec, raw = encode_tensor(x)
    y = decode_tensor(spec, raw)

    assert spec == {"dtype": name, "shape": [3, 5]}
    assert y.dtype == x.dtype and y.shape == x.shape
    assert torch.equal(y.view(torch.uint8), x.view(torch.uint8))


def test_bytes_are_little_endian_in_c_order_even_for_a_transposed_view() -> None:
    x = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32).t()  # not contiguous

    _, raw = encode_tensor(x)

    assert raw == b"".join(v.to_bytes(4, "little") for v in (1, 3, 2, 4))


def test_empty_and_zero_dim_tensors_round_trip() -> None:
    for x in (torch.empty(0, 7), torch.tensor(5, dtype=torch.int64)):
        spec, raw = encode_tensor(x)
        assert torch.equal(decode_tensor(spec, raw), x)


def test_byteswap_reverses_each_element() -> None:
    raw = torch.tensor([1, 0, 0, 0, 0, 0, 0, 2], dtype=torch.uint8)

    assert byteswap(raw, 4).tolist() == [0, 0, 0, 1, 2, 0, 0, 0]


def test_a_dtype_the_wire_does_not_carry_cannot_be_encoded() -> None:
    with pytest.raises(ValueError, match="float64 cannot go on the wire"):
        encode_tensor(torch.zeros(2, dtype=torch.float64))


@pytest.mark.parametrize(
    ("spec", "error", "match"),
    [
        ({"dtype": "float64", "shape": [2]}, MalformedFrameError, "unknown tensor dtype 'float64'"),
        ({"dtype": "float32", "shape": [-1]}, MalformedFrameError, "ints >= 0"),
        ({"dtype": "float32", "shape": [2.0]}, MalformedFrameError, "ints >= 0"),
        ({"dtype": "float32", "shape": [True]}, MalformedFrameError, "ints >= 0"),
        ({"dtype": "float32", "shape": "2"}, MalformedFrameError, "list of at most 8"),
        ({"dtype": "float32", "shape": [1] * 9}, MalformedFrameError, "list of at most 8"),
        ({"dtype": "float32", "shape": [10**12]}, FrameTooLargeError, "over the limit"),
        ({"dtype": "float32", "shape": [0, 10**12]}, FrameTooLargeError, "over the limit"),
        ({"dtype": "float32", "shape": [2**20, 2**20]}, FrameTooLargeError, "smaller pieces"),
        ({"shape": [2]}, MalformedFrameError, "unknown tensor dtype None"),
    ],
)
def test_a_bad_spec_is_refused_before_reading_the_bytes(spec: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        decode_tensor(spec, b"")


def test_a_byte_count_that_disagrees_with_the_spec_is_refused() -> None:
    spec, raw = encode_tensor(torch.zeros(4))

    with pytest.raises(MalformedFrameError, match="needs 16 bytes, got 15"):
        decode_tensor(spec, raw[:-1])


def test_bool_bytes_other_than_0_and_1_are_refused() -> None:
    with pytest.raises(MalformedFrameError, match="0 and 1"):
        decode_tensor({"dtype": "bool", "shape": [2]}, b"\x01\x02")


def test_spec_sizes_follow_dtype_and_shape() -> None:
    spec = TensorSpec.parse("bfloat16", [3, 0, 2])

    assert (spec.numel, spec.nbytes) == (0, 0)
    assert TensorSpec.parse("int64", [3, 2]).nbytes == 48


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_int8_quantisation_stays_within_the_documented_bound(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(64, 384, generator=gen) * torch.logspace(-4, 4, 64).unsqueeze(1)  # (rows, D) wide range
    x[3, 7] = 500.0  # an outlier row
    x = x.to(dtype)

    q, scale = quantize_int8(x)
    error = (dequantize_int8(q, scale) - x.float()).abs()

    assert q.dtype == torch.int8 and scale.shape == (64, 1)
    assert bool((error <= scale * (0.5 + 2**-16)).all())
    assert float((error / scale).max()) > 0.45  # the bound is tight: round-to-nearest loses up to s/2


def test_int8_quantisation_keeps_zero_rows_exact() -> None:
    x = torch.zeros(2, 8)
    x[1] = torch.linspace(-1, 1, 8)

    q, scale = quantize_int8(x)

    assert torch.equal(dequantize_int8(q, scale)[0], x[0])
    assert q[1].abs().max() == 127


def test_int8_quantisation_refuses_non_finite_input() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        quantize_int8(torch.tensor([[1.0, float("inf")]]))
