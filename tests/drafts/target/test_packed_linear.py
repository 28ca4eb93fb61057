"""The target with oneDNN-prepacked Linear layers (moa-bench --packed-linear): same computation."""

from __future__ import annotations

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.errors import ConfigError
from drafts.target.packed_linear import PackedLinear, pack_linear_layers
from tests.tiny_drafts import tiny_llama, tiny_target_runner

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN")


def test_a_packed_linear_computes_the_dense_one() -> None:
    torch.manual_seed(0)
    dense = torch.nn.Linear(48, 80)
    packed = PackedLinear(dense)
    x = torch.randn(2, 5, 48)  # (batch, positions, in)
    with torch.inference_mode():
        assert torch.allclose(packed(x), dense(x), atol=1e-5)
        assert packed(x).shape == (2, 5, 80)


def test_a_packed_target_keeps_its_logits_and_its_greedy_output() -> None:
    dense, packed = tiny_target_runner(tiny_llama(seed=0)), tiny_target_runner(tiny_llama(seed=0))
    pack_linear_layers(packed.model)
    assert not any(type(m) is torch.nn.Linear for m in packed.model.modules())
    prompt = [3, 9, 14, 1, 7]
    a = dense.extend(dense.new_session(), prompt)
    b = packed.extend(packed.new_session(), prompt)
    assert torch.allclose(a, b, atol=1e-4)
    config = DecodeConfig(max_new_tokens=12)
    assert (
        generate_autoregressive(dense, prompt, config).tokens == generate_autoregressive(packed, prompt, config).tokens
    )


def test_packing_refuses_weights_that_are_not_cpu_float32() -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    runner.model.to(torch.bfloat16)
    with pytest.raises(ConfigError, match="float32"):
        pack_linear_layers(runner.model)
