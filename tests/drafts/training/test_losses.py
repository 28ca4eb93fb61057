"""The shared distillation loss: 0.1 KL(p || q) + SmoothL1 on response positions, optional top-K."""

from __future__ import annotations

import pytest
import torch

from drafts.neural.target_parts import TargetParts
from drafts.training.losses import LossWeights, distillation_loss

B, T, H, V = 2, 6, 8, 12


@pytest.fixture
def parts() -> TargetParts:
    generator = torch.Generator().manual_seed(0)
    head = torch.randn(V, H, generator=generator)
    return TargetParts(torch.nn.Embedding(V, H), head, torch.arange(V), V)


def hidden(seed: int) -> torch.Tensor:
    return torch.randn(B, T, H, generator=torch.Generator().manual_seed(seed))


MASK = torch.tensor([[False, False, True, True, True, False], [False, True, True, False, False, False]])


def test_a_perfect_prediction_costs_only_the_targets_entropy(parts: TargetParts) -> None:
    target = hidden(1)

    loss, stats = distillation_loss(target.clone(), target, MASK, parts, LossWeights())

    p = torch.softmax(parts.logits(target[MASK]), dim=-1)
    entropy = -(p * p.log()).sum(-1).mean()
    assert stats["feature"] == 0.0 and stats["top1"] == 1.0
    assert loss.item() == pytest.approx(0.1 * entropy.item(), rel=1e-5)


def test_positions_outside_the_mask_cost_nothing(parts: TargetParts) -> None:
    draft, target = hidden(2), hidden(3)
    changed = draft.clone()
    changed[~MASK] += 100.0

    assert distillation_loss(changed, target, MASK, parts, LossWeights())[0].item() == pytest.approx(
        distillation_loss(draft, target, MASK, parts, LossWeights())[0].item()
    )


def test_the_loss_is_the_weighted_sum_of_its_terms(parts: TargetParts) -> None:
    draft, target = hidden(4), hidden(5)
    weights = LossWeights(kl=0.3, feature=2.0, topk=0.5, k=3)

    loss, stats = distillation_loss(draft, target, MASK, parts, weights)

    log_q = torch.log_softmax(parts.logits(draft[MASK]), dim=-1)
    p = torch.softmax(parts.logits(target[MASK]), dim=-1)
    top = p.topk(3, dim=-1).indices
    topk = -(p.gather(-1, top) * log_q.gather(-1, top)).sum(-1).mean()
    expected = 0.3 * stats["kl"] + 2.0 * stats["feature"] + 0.5 * topk.item()
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_gradients_reach_the_masked_draft_positions_only(parts: TargetParts) -> None:
    draft = hidden(6).requires_grad_()

    distillation_loss(draft, hidden(7), MASK, parts, LossWeights())[0].backward()

    assert draft.grad is not None
    assert (draft.grad[MASK].abs().sum(-1) > 0).all()
    assert (draft.grad[~MASK] == 0).all()


def test_with_a_tli_layer_input_the_feature_term_is_split_half_and_half(parts: TargetParts) -> None:
    draft, target, draft_input = hidden(8), hidden(9), hidden(10)
    target_input = draft_input + 1.0  # SmoothL1 of a difference of 1 is 0.5

    loss, stats = distillation_loss(draft, target, MASK, parts, LossWeights(), (draft_input, target_input))

    alone = distillation_loss(draft, target, MASK, parts, LossWeights())[1]
    assert stats["tail_input"] == pytest.approx(0.5)
    assert stats["feature"] == pytest.approx(0.5 * alone["feature"] + 0.25, rel=1e-5)
    assert loss.item() == pytest.approx(0.1 * stats["kl"] + stats["feature"], rel=1e-5)


def test_a_normalised_tail_input_term_ignores_the_scale_of_the_residual_stream(parts: TargetParts) -> None:
    draft, target, draft_input, target_input = hidden(8), hidden(9), hidden(10), hidden(11)
    normalised = LossWeights(tail_norm=True)

    def tail_term(scale: float, weights: LossWeights) -> float:
        tail = (scale * draft_input, scale * target_input)
        return distillation_loss(draft, target, MASK, parts, weights, tail)[1]["tail_input"]

    assert tail_term(100.0, normalised) == pytest.approx(tail_term(1.0, normalised), rel=1e-5)
    assert tail_term(100.0, LossWeights()) > 50 * tail_term(1.0, LossWeights())  # raw: grows with the scale
    rms = target_input[MASK].pow(2).mean(-1, keepdim=True).sqrt()
    expected = torch.nn.functional.smooth_l1_loss(draft_input[MASK] / rms, target_input[MASK] / rms)
    assert tail_term(1.0, normalised) == pytest.approx(expected.item(), rel=1e-5)
