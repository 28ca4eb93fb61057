"""Vectors on the wire: named as the protocol says, float16, on the CPU."""

from __future__ import annotations

import torch

from drafts.target.activations import Activations
from server_stub.payloads import to_wire


def test_every_vector_kind_gets_its_wire_name_in_float16() -> None:
    vectors = Activations({3: torch.randn(2, 8), 0: torch.randn(2, 8)}, torch.randn(2, 3, 6), torch.randn(2, 8))

    wire = to_wire(vectors)

    assert list(wire) == ["hidden:0", "hidden:3", "kv", "memory"]
    assert all(t.dtype == torch.float16 and t.device.type == "cpu" for t in wire.values())
    assert vectors.kv is not None
    torch.testing.assert_close(wire["kv"].float(), vectors.kv, atol=1e-2, rtol=1e-3)


def test_no_vectors_means_no_activations() -> None:
    assert to_wire(Activations()) == {}
