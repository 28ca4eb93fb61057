"""The draft training objective, one for every draft so comparisons are fair.

MoA's code: ``0.1 * KL(p || q) + SmoothL1(h_draft, h_target)`` over response tokens, where ``p``
is the target's next-token distribution (from its final hidden state through the frozen LM
head) and ``q`` the draft's. Optional HASS term (Zhang et al. 2025): the soft cross-entropy
restricted to the target's top-K tokens, ``-sum_{x in TopK(p)} p(x) log q(x)`` with K = 10.
With a reduced draft vocabulary both distributions live on it (EAGLE-3 does the same).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from drafts.neural.target_parts import TargetParts


@dataclass(frozen=True)
class LossWeights:
    kl: float = 0.1  # MoA / EAGLE weight of the distribution term
    feature: float = 1.0  # SmoothL1 to the target's final hidden state
    topk: float = 0.0  # HASS top-K distillation (1.0 in HASS's second stage)
    k: int = 10


def distillation_loss(
    h_draft: torch.Tensor, h_target: torch.Tensor, mask: torch.Tensor, parts: TargetParts, w: LossWeights
) -> tuple[torch.Tensor, dict[str, float]]:
    """Loss over positions where ``mask`` (B, T) is True; h_* are (B, T, H)."""
    pred, true = h_draft[mask], h_target[mask]  # (n, H) each: only response tokens cost logits
    log_q = torch.log_softmax(parts.logits(pred).float(), dim=-1)  # (n, Dv)
    with torch.no_grad():
        p = torch.softmax(parts.logits(true).float(), dim=-1)  # (n, Dv)
    kl = -(p * log_q).sum(-1).mean()
    feature = F.smooth_l1_loss(pred, true)
    loss = w.kl * kl + w.feature * feature
    if w.topk:
        top = p.topk(w.k, dim=-1).indices  # (n, K)
        loss = loss + w.topk * -(p.gather(-1, top) * log_q.gather(-1, top)).sum(-1).mean()
    acc = (log_q.argmax(-1) == p.argmax(-1)).float().mean()
    return loss, {"loss": loss.item(), "kl": kl.item(), "feature": feature.item(), "top1": acc.item()}
