"""Batched decoding with a KV cache: many prompts answered at once by a Hugging Face causal LM.

The prompts are left-padded to one length and prefilled in one forward pass; then every step
feeds each live row its last token. Padding is masked out (``attention_mask``) and each row's
positions count only its own tokens, so a row decodes as it would alone (up to float rounding
of the batched matmuls). A row that emits a stop token or reaches its budget leaves the batch:
its cache rows are dropped, so the steps that follow run on the rows still going.

Each row has its own temperature: 0 is greedy (argmax), above 0 a sample from the plain
softmax at that temperature (no top-k/top-p: the data follows the target's own distribution,
which is what speculative sampling verifies against). Both go through :mod:`drafts.sampling`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from drafts.sampling import SamplingConfig, logits_to_probs, sample


@dataclass(frozen=True)
class Row:
    """One prompt to answer."""

    prompt: Sequence[int]  # token ids, the chat template's generation prompt included
    max_new_tokens: int  # the reply stops here if no stop token came first
    temperature: float = 0.0  # 0 = greedy


@torch.inference_mode()
def decode_batch(
    model: Any,
    rows: Sequence[Row],
    stop_ids: Collection[int],
    *,
    pad_id: int = 0,
    generator: torch.Generator | None = None,
) -> list[list[int]]:
    """The reply token ids of every row (its stop token excluded), in the order of ``rows``."""
    if not rows:
        return []
    if any(len(row.prompt) == 0 or row.max_new_tokens < 1 for row in rows):
        raise ValueError("every row needs a non-empty prompt and max_new_tokens >= 1")
    device = next(model.parameters()).device
    ids, mask = _left_padded([row.prompt for row in rows], pad_id, device)  # (B, P) each
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # (B, P): each row counts from its first real token
    cache = DynamicCache()
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        cache=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    replies: list[list[int]] = [[] for _ in rows]
    live = torch.arange(len(rows), device=device)  # (b,) the row index of each batch slot
    next_pos = positions[:, -1] + 1  # (b,)
    temperatures = torch.tensor([row.temperature for row in rows], device=device)  # (B,)
    budgets = [row.max_new_tokens for row in rows]
    logits = out.logits[:, -1]  # (b, V)
    while True:
        tokens = choose_tokens(logits, temperatures[live], generator)  # (b,)
        keep = _record(tokens.tolist(), live.tolist(), replies, budgets, stop_ids)  # slots still going
        if not keep:
            return replies
        if len(keep) < len(live):
            slots = torch.tensor(keep, device=device)
            _select_rows(cache, slots)
            live, mask, next_pos, tokens = live[slots], mask[slots], next_pos[slots], tokens[slots]
        mask = torch.cat([mask, mask.new_ones(len(live), 1)], dim=1)  # (b, S + 1)
        out = model(
            input_ids=tokens[:, None],
            attention_mask=mask,
            position_ids=next_pos[:, None],
            cache=cache,
            use_cache=True,
        )
        next_pos = next_pos + 1
        logits = out.logits[:, -1]


def choose_tokens(logits: torch.Tensor, temperatures: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row of ``logits`` (b, V): argmax where the temperature is 0, else a sample."""
    tokens = logits.argmax(dim=-1)  # (b,)
    for temperature in temperatures.unique().tolist():
        if temperature == 0.0:
            continue
        rows = (temperatures == temperature).nonzero().flatten()
        probs = logits_to_probs(logits[rows], SamplingConfig(temperature=float(temperature)))  # (r, V)
        tokens[rows] = sample(probs, generator).to(tokens.dtype)
    return tokens


def _record(
    tokens: list[int], live: list[int], replies: list[list[int]], budgets: list[int], stop_ids: Collection[int]
) -> list[int]:
    """Append each live row's token to its reply; the batch slots whose row goes on."""
    keep = []
    for slot, (row, token) in enumerate(zip(live, tokens, strict=True)):
        if token in stop_ids:
            continue
        replies[row].append(token)
        if len(replies[row]) < budgets[row]:
            keep.append(slot)
    return keep


def _left_padded(
    prompts: Sequence[Sequence[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)  # (B, P)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)  # (B, P)
    for i, prompt in enumerate(prompts):
        ids[i, width - len(prompt) :] = torch.tensor(list(prompt))
        mask[i, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device)


def _select_rows(cache: DynamicCache, slots: torch.Tensor) -> None:
    """Keep only batch rows ``slots`` of every layer's keys and values (B, n_kv, S, hd)."""
    layers: list[Any] = list(cache.layers)  # full-attention layers: .keys, .values
    for layer in layers:
        layer.keys = layer.keys[slots]
        layer.values = layer.values[slots]


__all__ = ["Row", "choose_tokens", "decode_batch"]
