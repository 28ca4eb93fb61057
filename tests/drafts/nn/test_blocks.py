"""Attention reads grouped K/V heads in place with the numbers a repeat of the heads gives, bit for bit."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from drafts.nn.blocks import GQA_IN_SDPA, Attention, BlockConfig, DecoderBlock
from drafts.nn.rope import apply_rope, inverse_frequencies, rope_tables


@pytest.mark.parametrize("queries, keys, masked", [(1, 40, False), (4, 40, True)])
def test_grouped_query_attention_equals_attention_over_repeated_heads(queries: int, keys: int, masked: bool) -> None:
    torch.manual_seed(0)
    attn = Attention(BlockConfig(hidden=48, heads=6, kv_heads=2, intermediate=32)).eval()
    x = torch.randn(1, queries, 48)
    k, v = torch.randn(1, 2, keys + 8, 8)[:, :, :keys], torch.randn(1, 2, keys, 8)  # k: a prefix view, as cached
    rope = rope_tables(torch.arange(keys - queries, keys)[None], 8, 10_000.0)
    mask = torch.rand(1, 1, queries, keys) > 0.3 if masked else None
    if mask is not None:
        mask[..., 0] = True

    with torch.no_grad():
        out = attn.attend(x, rope, k, v, mask)
        q = attn.q_proj(x).view(1, queries, 6, 8).transpose(1, 2)
        q = apply_rope(q, *rope)
        y = F.scaled_dot_product_attention(q, k.repeat_interleave(3, dim=1), v.repeat_interleave(3, dim=1), mask)
        expected = attn.o_proj(y.transpose(1, 2).reshape(1, queries, -1))

    assert torch.equal(out, expected)
    assert GQA_IN_SDPA  # torch >= 2.5 here: the in-place path is the one compared


def test_rope_tables_use_the_usual_inverse_frequencies() -> None:
    expected = 1.0 / (10_000.0 ** (torch.arange(0, 16, 2).float() / 16))
    with torch.inference_mode():
        cached = inverse_frequencies(16, 10_000.0, torch.device("cpu"))
    assert torch.equal(cached, expected) and not cached.is_inference()
    cos, _ = rope_tables(torch.tensor([3]), 16, 10_000.0)
    assert torch.equal(cos, torch.cat([3 * expected, 3 * expected])[None].cos())


def test_forward_mean_is_the_mean_of_forward_with_the_same_gradients() -> None:
    """MoA's LSA averages a block's outputs over 30 layer tokens; averaging before the (linear) down
    projection is the same function, so outputs and every weight's gradient agree up to rounding."""
    torch.manual_seed(0)
    block = DecoderBlock(BlockConfig(hidden=48, heads=6, kv_heads=2, intermediate=40))
    x = torch.randn(5, 7, 48)
    rope = rope_tables(torch.arange(7)[None], 8, 10_000.0)
    weight = torch.randn(5, 48)

    def grads(out: torch.Tensor) -> list[torch.Tensor]:
        block.zero_grad()
        (out * weight).sum().backward()
        return [p.grad.clone() for p in block.parameters() if p.grad is not None]

    reference, fused = block(x, rope, None).mean(dim=1), block.forward_mean(x, rope, None)

    assert fused.shape == (5, 48)
    torch.testing.assert_close(fused, reference, rtol=1e-5, atol=1e-6)
    for a, b in zip(grads(block.forward_mean(x, rope, None)), grads(block(x, rope, None).mean(dim=1)), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
