"""Vectors on the wire, both ways: what the verifier encodes is what the client's draft observes."""

from __future__ import annotations

import pytest
import torch

from drafts.errors import MalformedFrameError
from drafts.protocol.tensors import quantize_int8
from drafts.protocol.vectors import from_wire, to_wire
from drafts.target.activations import Activations


def test_every_kind_of_vector_comes_back_in_the_drafts_dtype() -> None:
    generator = torch.Generator().manual_seed(0)
    sent = Activations(
        {30: torch.randn(3, 8, generator=generator)},
        torch.randn(3, 4, 6, generator=generator),
        torch.randn(3, 8, generator=generator),
    )

    got = from_wire(to_wire(sent), torch.float32)

    assert set(got.hidden) == {30} and got.kv is not None and got.memory is not None and sent.kv is not None
    assert got.kv.dtype == torch.float32 and got.kv.shape == (3, 4, 6)
    torch.testing.assert_close(got.hidden[30], sent.hidden[30], atol=1e-2, rtol=1e-3)
    torch.testing.assert_close(got.kv, sent.kv, atol=1e-2, rtol=1e-3)


def test_int8_vectors_are_dequantised_with_their_scale() -> None:
    memory = torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    q, scale = quantize_int8(memory)

    got = from_wire({"memory": q, "memory.scale": scale}, torch.float32)

    assert got.memory is not None
    assert (got.memory - memory).abs().max() <= scale.max() * 0.51


def test_an_int8_vector_without_its_scale_is_refused() -> None:
    q, _ = quantize_int8(torch.randn(2, 4))

    with pytest.raises(MalformedFrameError, match="memory.scale"):
        from_wire({"memory": q}, torch.float32)


def test_a_vector_this_client_does_not_know_is_refused_with_what_to_do() -> None:
    with pytest.raises(MalformedFrameError, match="update moa-chat"):
        from_wire({"attention:3": torch.zeros(1, 2)}, torch.float32)
