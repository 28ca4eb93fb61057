"""Training masks of MoA (Zimmer et al. 2025, §3 of our digest; the official code's masks).

A training sequence simulates decoding: the target "verifies" every prompt position and every
``k``-th response position (k ~ U{6..14} per sequence by default; ``MoAConfig.period_min/max``).
``start[i]`` is the last verified position strictly before ``i``: exactly what the draft sees at
inference, where the newest target state is always at least one token behind the token being
drafted from (depths 1..k). The official code instead takes the last verified position *at or
before* ``i`` (``depth0``): a verified position then reads its own target state (depth 0, a case
decoding never meets) and the depths run 0..k-1. Then

- the **T-step bounded cross-attention mask** lets query ``i`` see target state ``j <= start[i]``;
- the **staircase self-attention mask** (used on a sample with a probability annealed to 0 by
  mid-training) restricts self-attention to the tokens after ``start[i]``, forcing the draft to
  read the context through cross-attention early in training.
"""

from __future__ import annotations

import torch

PERIOD_RANGE = (6, 14)  # verification period k, inclusive, as in the official code


def sample_periods(
    batch: int, generator: torch.Generator | None = None, period_range: tuple[int, int] = PERIOD_RANGE
) -> torch.Tensor:
    """One verification period per sequence: (B,) in ``period_range`` (inclusive)."""
    low, high = period_range
    return torch.randint(low, high + 1, (batch,), generator=generator)


def verification_starts(loss_mask: torch.Tensor, periods: torch.Tensor, depth0: bool = False) -> torch.Tensor:
    """(B, T) index of the last verified position before each position (0 for position 0), or with
    ``depth0`` at or before it (the official code's ``cummax``: a verified position is its own start).

    Prompt positions (``loss_mask`` False) are all verified; response positions every
    ``periods[b]`` tokens.
    """
    B, T = loss_mask.shape
    idx = torch.arange(T, device=loss_mask.device).expand(B, T)  # (B, T)
    verified = ~loss_mask | (idx % periods[:, None].to(loss_mask.device) == 0)  # (B, T)
    marked = torch.where(verified, idx, torch.full_like(idx, -1))  # (B, T)
    last_at_or_before = marked.cummax(dim=1).values  # (B, T); position 0 is always verified (0 % k == 0)
    if depth0:
        return last_at_or_before
    before = torch.cat([torch.zeros_like(idx[:, :1]), last_at_or_before[:, :-1]], dim=1)  # (B, T)
    return before.clamp_min(0)


def cross_attention_mask(starts: torch.Tensor) -> torch.Tensor:
    """(B, 1, T, T) bool: query i may read target state j iff j <= starts[i]."""
    T = starts.shape[1]
    j = torch.arange(T, device=starts.device)
    return (j[None, None, :] <= starts[:, :, None])[:, None]


def self_attention_mask(starts: torch.Tensor, staircase: torch.Tensor) -> torch.Tensor:
    """(B, 1, T, T) bool causal mask; rows of sequences with ``staircase`` (B,) see only (start, i]."""
    T = starts.shape[1]
    i = torch.arange(T, device=starts.device)
    causal = i[None, :] <= i[:, None]  # (T, T)
    stair = causal[None] & (i[None, None, :] > starts[:, :, None])  # (B, T, T)
    stair |= torch.eye(T, dtype=torch.bool, device=starts.device)[None]  # never an empty row
    return torch.where(staircase[:, None, None], stair, causal[None])[:, None]


def staircase_probability(progress: float) -> float:
    """Probability of the staircase mask at training ``progress`` in [0, 1]: 1 -> 0 by mid-training."""
    return max(0.0, 1.0 - progress / 0.5)
