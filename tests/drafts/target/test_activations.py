from __future__ import annotations

import torch

from drafts.target.activations import NOTHING, ActivationRequest, Activations


def test_nothing_requests_nothing() -> None:
    assert NOTHING.empty
    assert not ActivationRequest(hidden_layers=(1,)).empty
    assert not ActivationRequest(all_layer_kv=True).empty


def test_the_union_of_requests_asks_for_everything_either_asks_for() -> None:
    union = ActivationRequest((3, 1)).union(ActivationRequest((1, 0), all_layer_kv=True))

    assert union == ActivationRequest((0, 1, 3), all_layer_kv=True)


def test_select_keeps_the_same_rows_of_every_activation() -> None:
    hidden = torch.arange(12.0).reshape(4, 3)
    kv = torch.arange(16.0).reshape(4, 2, 2)
    acts = Activations({2: hidden}, kv)

    picked = acts.select(torch.tensor([0, 3]))

    assert torch.equal(picked.hidden[2], hidden[[0, 3]])
    assert torch.equal(picked.kv, kv[[0, 3]])
    assert Activations({2: hidden}).select(slice(1, 2)).kv is None
