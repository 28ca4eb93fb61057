"""The target with oneDNN-prepacked Linear layers (the CPU float32 default of inference): same computation."""

from __future__ import annotations

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.errors import ConfigError
from drafts.neural.target_parts import TargetParts
from drafts.target.packed_linear import PACK_ROWS, PackedLinear, pack_linear_layers, resolve_linear
from tests.tiny_drafts import tiny_llama, tiny_target_runner

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN")

CPU, CUDA = torch.device("cpu"), torch.device("cuda")


def test_a_packed_linear_computes_the_dense_one() -> None:
    torch.manual_seed(0)
    dense = torch.nn.Linear(48, 80)
    packed = PackedLinear(dense)
    x = torch.randn(2, 5, 48)  # (batch, positions, in)
    with torch.inference_mode():
        assert torch.allclose(packed(x), dense(x), atol=1e-5)
        assert packed(x).shape == (2, 5, 80)


def test_a_packed_linear_gives_any_input_shape_the_bits_of_the_two_dimensional_product() -> None:
    """(batch, positions, in) and non-contiguous inputs get the product of their rows, with or without a bias."""
    torch.manual_seed(0)
    for bias in (True, False):
        packed = PackedLinear(torch.nn.Linear(576, 192, bias=bias))
        for x in (torch.randn(1, 1, 576), torch.randn(1, 9, 576), torch.randn(9, 3, 576).transpose(0, 1)):
            with torch.inference_mode():
                rows = packed(x.reshape(-1, 576).contiguous())
                assert torch.equal(packed(x), rows.reshape(*x.shape[:-1], 192))


def test_a_packed_weight_is_laid_out_once_for_verify_rows() -> None:
    """The weight oneDNN multiplies is the blocked one laid out for PACK_ROWS rows, not the plain copy
    that oneDNN would re-lay out on every multi-row call."""
    torch.manual_seed(0)
    dense = torch.nn.Linear(576, 192, bias=False)
    packed = PackedLinear(dense)
    laid_out = torch.ops.mkldnn._reorder_linear_weight(dense.weight.detach(), PACK_ROWS)
    x = torch.randn(9, 576)
    with torch.inference_mode():
        expected = torch.ops.mkldnn._linear_pointwise(x, laid_out, None, "none", [], "")
        assert torch.equal(packed(x), expected)
        assert torch.allclose(packed(x), dense(x), atol=1e-4)


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


def test_auto_packs_on_a_cpu_in_float32_only() -> None:
    assert resolve_linear("auto", CPU, torch.float32) == "packed"
    assert resolve_linear("auto", CPU, torch.bfloat16) == "dense"
    assert resolve_linear("auto", CUDA, torch.bfloat16) == "dense"
    assert resolve_linear("auto", CUDA, torch.float32) == "dense"
    assert resolve_linear("dense", CPU, torch.float32) == "dense"
    assert resolve_linear("packed", CPU, torch.float32) == "packed"


def test_auto_is_dense_without_onednn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    assert resolve_linear("auto", CPU, torch.float32) == "dense"
    with pytest.raises(ConfigError, match="oneDNN"):
        resolve_linear("packed", CPU, torch.float32)


def test_asking_for_packed_where_it_cannot_be_or_an_unknown_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="bfloat16 on cuda.*--dense-linear"):
        resolve_linear("packed", CUDA, torch.bfloat16)
    with pytest.raises(ConfigError, match="unknown linear mode 'fast'; use one of auto, packed, dense"):
        resolve_linear("fast", CPU, torch.float32)


def test_a_packed_layer_refuses_an_input_that_wants_gradients() -> None:
    packed = PackedLinear(torch.nn.Linear(8, 4))
    x = torch.randn(3, 8, requires_grad=True)
    with pytest.raises(ConfigError, match="inference only.*linear='dense'"):
        packed(x)
    with torch.no_grad():
        assert packed(x).shape == (3, 4) and not packed(x).requires_grad


def test_packing_frees_the_dense_layers_but_keeps_the_head_the_drafts_read() -> None:
    model = tiny_llama(seed=0)
    head = model.get_output_embeddings().weight
    dense_bytes = _bytes(model)
    pack_linear_layers(model)
    assert isinstance(model.lm_head, PackedLinear) and model.get_output_embeddings().weight is head
    assert torch.equal(TargetParts.from_model(model).head_weight, head)
    attention = model.model.layers[0].self_attn
    assert isinstance(attention.q_proj, PackedLinear) and not hasattr(attention.q_proj, "weight")
    embeddings, norms = model.get_input_embeddings().weight, _bytes(model, "norm")
    assert _bytes(model) == 4 * (head.numel() + embeddings.numel()) + norms < dense_bytes


def test_a_head_tied_to_the_embeddings_stays_tied() -> None:
    model = tiny_llama(seed=0)
    model.lm_head.weight = model.get_input_embeddings().weight  # tied, as SmolLM2's
    pack_linear_layers(model)
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    x = torch.randn(2, 64)
    with torch.inference_mode():
        assert torch.allclose(model.lm_head(x), x @ model.get_input_embeddings().weight.T, atol=1e-5)


def _bytes(model: torch.nn.Module, part: str = "") -> int:
    """Bytes of the (fp32) parameters whose name contains ``part``."""
    return sum(p.numel() * 4 for name, p in model.named_parameters() if part in name)
