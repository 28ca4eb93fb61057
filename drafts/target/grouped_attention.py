"""The target's attention: transformers' SDPA, with a masked CPU call's grouped K/V heads left grouped.

Under a mask (a tree verify's ancestor mask) transformers' ``sdpa`` repeats the K/V heads to every
query head first (``repeat_kv``: a copy of the layer's whole cache, every layer, every verify), because
CUDA's fused kernels would otherwise fall back to the math kernel. torch's CPU kernel takes grouped
heads as they are (``enable_gqa``). :func:`grouped_sdpa` hands it them so, with the same numbers bit
for bit (``tests/drafts/target/test_grouped_attention.py``); every other call (no mask, one query row,
one group, an accelerator, a softcap or position bias) goes to transformers' own ``sdpa`` unchanged. SmolLM2-135M at
a 300-token context: a verify of 5 / 9 / 17 positions 2-4 % less CPU
(``drafts/bench/results/2026-12-04-s25/grouped-attention/``). transformers' own switch
(``TRANSFORMERS_SDPA_FORCE_GQA``) is process-wide and would send masked CUDA calls to the math kernel.

:func:`attention_implementation` registers it, and ``sdpa``'s mask builder under the same name, and
returns the name the target loads with (:func:`drafts.target.loading.load_target`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional as F  # noqa: N812
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

NAME = "moa_grouped_sdpa"
_GROUPED_KERNEL = torch.__version__ >= "2.5"  # scaled_dot_product_attention(enable_gqa=...)


def grouped_sdpa(
    module: torch.nn.Module,
    query: torch.Tensor,  # (B, H, q, D)
    key: torch.Tensor,  # (B, Hkv, k, D)
    value: torch.Tensor,  # (B, Hkv, k, D)
    attention_mask: torch.Tensor | None,  # (B or 1, 1, q, k) bool, or None
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature; returns (B, q, H, D)."""
    if not _stays_grouped(module, query, attention_mask, kwargs):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    out = F.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, enable_gqa=True
    )  # (B, H, q, D)
    return out.transpose(1, 2).contiguous(), None


def _stays_grouped(
    module: torch.nn.Module, query: torch.Tensor, mask: torch.Tensor | None, kwargs: dict[str, Any]
) -> bool:
    return (
        _GROUPED_KERNEL
        and getattr(module, "num_key_value_groups", 1) > 1
        and query.shape[2] > 1  # one query row: transformers packs the groups (pack_gqa), no repeat to avoid
        and mask is not None
        and mask.dtype == torch.bool
        and query.device.type == "cpu"
        and kwargs.get("softcap") is None
        and kwargs.get("position_bias") is None
    )


def attention_implementation() -> str:
    """Register :func:`grouped_sdpa` (and sdpa's masks) as :data:`NAME`; the name to load a model with."""
    AttentionInterface.register(NAME, grouped_sdpa)
    ALL_MASK_ATTENTION_FUNCTIONS.register(NAME, sdpa_mask)
    return NAME
