"""HASS context alignment of the EAGLE draft: training step j at position i computes what drafting
depth j computes at inference, step 1 is plain teacher forcing, and earlier steps get no gradient."""

from __future__ import annotations

import pytest
import torch

from drafts.eagle.alignment import aligned_mask
from drafts.eagle.model import EagleDraft
from drafts.neural.base import TrainBatch
from drafts.target.activations import Activations
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import committed
from tests.tiny_targets import random_tokens

TOKENS = random_tokens(14, seed=11)
ATOL = 1e-5


def batch_of(runner: TargetRunner, tokens: list[int]) -> TrainBatch:
    feats = committed(runner, tokens).hidden[runner.num_layers].clone()  # (T, H) out of inference mode
    return TrainBatch(torch.tensor([tokens]), torch.ones(1, len(tokens), dtype=torch.bool), feats[None])


def drafted_logits(model: EagleDraft, runner: TargetRunner, tokens: list[int], context: int) -> torch.Tensor:
    """Inference: commit ``tokens[:context]``, then draft the rest as one chain; the last step's logits."""
    model.reset()
    prompt = tokens[:context]
    model.observe(prompt, 0, Activations({runner.num_layers: committed(runner, prompt).hidden[runner.num_layers]}))
    state = model.initial_state()
    for depth, token in enumerate(tokens[context:]):
        logits, state = model.step(torch.tensor([token]), torch.tensor([context + depth]), None, state)
    model.end_round()
    return logits[0]


def test_the_mask_of_step_three_sees_the_context_then_one_position_of_each_later_step() -> None:
    mask = aligned_mask(5, 3, torch.device("cpu"))[0, 0].int()  # (5, 15): true | step 2 | step 3

    assert mask[4].tolist() == [1, 1, 1, 0, 0] + [0, 0, 0, 1, 0] + [0, 0, 0, 0, 1]
    assert mask[1].tolist() == [0, 0, 0, 0, 0] + [1, 0, 0, 0, 0] + [0, 1, 0, 0, 0]
    assert mask[0].tolist() == [0] * 10 + [1, 0, 0, 0, 0]  # no position before 0: only its own input


def test_step_one_is_the_plain_teacher_forced_prediction(runner: TargetRunner, draft: EagleDraft) -> None:
    batch = batch_of(runner, TOKENS)
    with torch.no_grad():
        plain = draft.predict(batch, 1.0, torch.Generator().manual_seed(4))
        aligned = draft.predict_aligned(batch, 1.0, torch.Generator().manual_seed(4), 3)

    assert len(aligned) == 3
    assert torch.equal(aligned[0], plain)  # the same noise draw, the same computation


@pytest.mark.parametrize("step", [1, 2, 3])
def test_step_j_at_position_i_equals_drafting_depth_j_after_committing_up_to_i_minus_j(
    runner: TargetRunner, draft: EagleDraft, no_noise: None, step: int
) -> None:
    batch = batch_of(runner, TOKENS)
    with torch.no_grad():
        predicted = draft.predict_aligned(batch, 1.0, None, 3)[step - 1][0]  # (T, H)
    for i in (step + 2, 9, len(TOKENS) - 1):
        expected = drafted_logits(draft, runner, TOKENS[: i + 1], context=i - step + 1)

        assert torch.allclose(draft.parts.logits(predicted[i]), expected, atol=ATOL), f"position {i}"


def test_later_steps_differ_from_teacher_forcing(runner: TargetRunner, draft: EagleDraft, no_noise: None) -> None:
    with torch.no_grad():
        first, second = draft.predict_aligned(batch_of(runner, TOKENS), 1.0, None, 2)

    assert not torch.allclose(first[0, 1:], second[0, 1:], atol=1e-3)  # its own features, not the target's


def test_no_gradient_flows_into_an_earlier_steps_prediction(runner: TargetRunner, draft: EagleDraft) -> None:
    first, second = draft.predict_aligned(batch_of(runner, TOKENS), 1.0, None, 2)

    assert torch.autograd.grad(second.sum(), first, allow_unused=True) == (None,)
    assert torch.autograd.grad(second.sum(), draft.fc.weight)[0].abs().sum() > 0  # but into the weights
