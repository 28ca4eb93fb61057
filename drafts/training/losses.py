"""The draft training objective, one for every draft so comparisons are fair.

MoA's code: ``0.1 * KL(p || q) + SmoothL1(h_draft, h_target)`` over response tokens, where ``p``
is the target's next-token distribution (from its final hidden state through the frozen LM
head) and ``q`` the draft's. Optional HASS term (Zhang et al. 2025): the soft cross-entropy
restricted to the target's top-K tokens, ``-sum_{x in TopK(p)} p(x) log q(x)`` with K = 10.
With MoA's Target Layer Inference (N > 0) the draft also predicts the input of the target's last
N layers; the feature term is then ``0.5 SmoothL1(final) + 0.5 SmoothL1(input, hidden_states[L-N])``.
That input is the target's residual stream *before* its final norm, whose scale is far larger
than the normed final state's (and grows with depth), so its raw SmoothL1 can drown the final
term; ``tail_norm`` divides both sides by the target input's RMS per position (detached) first.
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
    tail_norm: bool = False  # TLI: compare the tail input at the scale of the normed final state


def distillation_loss(
    h_draft: torch.Tensor,
    h_target: torch.Tensor,
    mask: torch.Tensor,
    parts: TargetParts,
    w: LossWeights,
    tail_input: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Loss over positions where ``mask`` (B, T) is True; h_* are (B, T, H).

    ``tail_input``: (draft, target) (B, T, H) of the TLI layer input; it takes half the feature term.
    """
    pred, true = h_draft[mask], h_target[mask]  # (n, H) each: only response tokens cost logits
    log_q = torch.log_softmax(parts.logits(pred).float(), dim=-1)  # (n, Dv)
    with torch.no_grad():
        p = torch.softmax(parts.logits(true).float(), dim=-1)  # (n, Dv)
    kl = -(p * log_q).sum(-1).mean()
    feature = F.smooth_l1_loss(pred, true)
    stats: dict[str, float] = {}
    if tail_input is not None:
        input_term = _tail_input_term(tail_input[0][mask], tail_input[1][mask], w.tail_norm)
        stats["tail_input"] = input_term.item()
        feature = 0.5 * feature + 0.5 * input_term
    loss = w.kl * kl + w.feature * feature
    if w.topk:
        top = p.topk(w.k, dim=-1).indices  # (n, K)
        loss = loss + w.topk * -(p.gather(-1, top) * log_q.gather(-1, top)).sum(-1).mean()
    acc = (log_q.argmax(-1) == p.argmax(-1)).float().mean()
    return loss, {"loss": loss.item(), "kl": kl.item(), "feature": feature.item(), "top1": acc.item()} | stats


def _tail_input_term(pred: torch.Tensor, true: torch.Tensor, normalised: bool) -> torch.Tensor:
    """SmoothL1 of the predicted tail input (n, H) to the target's, optionally both divided by the
    target's RMS per position (so the term sees directions and relative size, not the raw scale)."""
    if normalised:
        rms = true.pow(2).mean(-1, keepdim=True).sqrt().clamp_min(1e-6)  # (n, 1), no gradient (true is data)
        pred, true = pred / rms, true / rms
    return F.smooth_l1_loss(pred, true)
