"""HASS context alignment for the EAGLE draft (Zhang et al., ICLR 2025, "harmonized context
alignment"; ``model/cnets_hass.py`` and ``train/main_hass.py`` of HArmonizedSS/HASS).

Teacher forcing trains EAGLE on the target's true features, but from the second drafted token
on, inference feeds it its own predicted features. HASS trains ``n`` steps per batch; step
``j`` simulates drafting depth ``j`` at every position at once:

- its query at position ``i`` fuses token ``x_i`` with the draft's own step ``j-1`` prediction
  at ``i-1`` (detached; step 1 uses the target's noised features, as plain EAGLE training);
- it attends to the *true-feature* inputs at positions ``<= i-j+1`` (the committed context and
  the first drafted token, whose parent feature is still the target's) and, at each position
  ``i-j+s`` for ``s = 2..j``, to the input built there from step ``s-1``'s predictions (the
  tokens drafted before it in the same round).

So step ``j``'s output at ``i`` is exactly what inference computes at depth ``j`` after the
target committed ``x_0..x_{i-j}`` (checked by the tests). Keys and values of every step's
inputs are recomputed with gradients (only the fed-back features are detached, as in HASS);
the trainer sums the ``n`` steps' losses, as HASS backpropagates each and steps once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from drafts.nn.blocks import DecoderBlock

if TYPE_CHECKING:
    from drafts.eagle.model import EagleDraft


def aligned_mask(T: int, step: int, device: torch.device) -> torch.Tensor:
    """(1, 1, T, step * T) bool: step ``step``'s query ``i`` over the keys of steps 1..step.

    Block 1 (true-feature inputs): positions ``p <= i - step + 1``; block ``s >= 2``: ``p = i - step + s``.
    """
    i = torch.arange(T, device=device)[:, None]  # (T, 1) query positions
    p = torch.arange(T, device=device)[None, :]  # (1, T) key positions
    blocks = [p <= i - step + 1] + [p == i - step + s for s in range(2, step + 1)]  # each (T, T)
    return torch.cat(blocks, dim=1)[None, None]


def _attend_steps(
    block: DecoderBlock, inputs: list[torch.Tensor], rope: tuple[torch.Tensor, torch.Tensor]
) -> torch.Tensor:
    """The decoder block on the last of ``inputs`` (each (B, T, H)), attending to all of their keys."""
    T = inputs[-1].shape[1]
    normed = [block.input_layernorm(x) for x in inputs]
    kv = [block.self_attn.project_kv(h, rope) for h in normed]  # each ((B, n_kv, T, hs), (B, n_kv, T, hs))
    k = torch.cat([k for k, _ in kv], dim=2)  # (B, n_kv, step * T, hs)
    v = torch.cat([v for _, v in kv], dim=2)
    mask = aligned_mask(T, len(inputs), inputs[-1].device)
    x = inputs[-1] + block.self_attn.attend(normed[-1], rope, k, v, mask)
    return x + block.mlp(block.post_attention_layernorm(x))


def aligned_predictions(
    model: EagleDraft, ids: torch.Tensor, first_prev: torch.Tensor, steps: int
) -> list[torch.Tensor]:
    """``steps`` predictions (each (B, T, H)) of the target's feature at every position.

    ``first_prev`` (B, T, H): the parent features of step 1 (the target's, shifted right, noised).
    """
    T = ids.shape[1]
    rope = model._rope(torch.arange(T, device=ids.device)[None])
    inputs = [model._fuse(ids, first_prev)]  # step s's fused inputs, (B, T, H) each
    causal = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()[None, None]
    predictions = [model.layer(inputs[0], rope, causal)]  # step 1: plain (noised) teacher forcing
    for _ in range(2, steps + 1):
        own = predictions[-1].detach()  # (B, T, H): no gradient into earlier steps
        prev = torch.cat([torch.zeros_like(own[:, :1]), own[:, :-1]], dim=1)  # parent of i: prediction at i-1
        inputs.append(model._fuse(ids, prev))
        predictions.append(_attend_steps(model.layer, inputs, rope))
    return predictions
