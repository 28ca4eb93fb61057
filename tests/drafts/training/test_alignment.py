"""``TrainConfig.align_steps`` (HASS context alignment) in the training loop: off, a run is the loss
it always was; on, the loss is the sum of every step's, the first being the plain one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from drafts.errors import ConfigError
from drafts.neural.base import TrainBatch
from drafts.target.runner import TargetRunner
from drafts.training.losses import LossWeights, distillation_loss
from drafts.training.tokenize import Sequence, tokenize_conversation
from drafts.training.trainer import TrainConfig, Trainer
from tests.chat_tokenizer import ChatTokenizer
from tests.drafts.training.conversations import conversations
from tests.tiny_drafts import random_draft, target_batch, tiny_llama, tiny_target_runner

WEIGHTS = LossWeights(topk=1.0)


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0), ChatTokenizer())


@pytest.fixture(scope="module")
def sequence(runner: TargetRunner) -> Sequence:
    seq = tokenize_conversation(runner.tokenizer, conversations()[0], 512)
    assert seq is not None
    return seq


def trainer_loss(runner: TargetRunner, seq: Sequence, tmp_path: Path, **options: int) -> tuple[float, dict[str, float]]:
    """The trainer's loss of ``seq`` for a fresh seeded EAGLE draft and a fresh seeded trainer."""
    model = random_draft("eagle", runner, seed=2).train()
    cfg = TrainConfig(tokens=100, seed=5, weights=WEIGHTS, **options)
    loss, stats = Trainer(model, runner, conversations(), cfg, tmp_path)._loss([seq])
    return loss.item(), stats


def batch_of(runner: TargetRunner, seq: Sequence) -> TrainBatch:
    return target_batch(runner, seq.ids.tolist(), seq.loss_mask.tolist())


def test_off_the_loss_is_the_plain_teacher_forced_loss(
    runner: TargetRunner, sequence: Sequence, tmp_path: Path
) -> None:
    model = random_draft("eagle", runner, seed=2).train()
    batch = batch_of(runner, sequence)
    pred = model.predict(batch, 0.0, torch.Generator().manual_seed(5))  # the trainer's generator: seed 5
    expected = distillation_loss(pred, batch.target_hidden, batch.loss_mask, model.parts, WEIGHTS)[0].item()

    default, _ = trainer_loss(runner, sequence, tmp_path)
    explicit, _ = trainer_loss(runner, sequence, tmp_path, align_steps=1)

    assert default == explicit == pytest.approx(expected, rel=1e-6)


def test_on_the_loss_sums_every_steps_loss_and_reports_each_steps_top1(
    runner: TargetRunner, sequence: Sequence, tmp_path: Path
) -> None:
    model = random_draft("eagle", runner, seed=2).train()
    batch = batch_of(runner, sequence)
    preds = model.predict_aligned(batch, 0.0, torch.Generator().manual_seed(5), 3)
    per_step = [
        distillation_loss(p, batch.target_hidden, batch.loss_mask, model.parts, WEIGHTS)[0].item() for p in preds
    ]
    plain, _ = trainer_loss(runner, sequence, tmp_path)

    aligned, stats = trainer_loss(runner, sequence, tmp_path, align_steps=3)

    assert per_step[0] == pytest.approx(plain, rel=1e-6)  # step 1 is the plain loss
    assert aligned == pytest.approx(sum(per_step), rel=1e-6)
    assert {"top1", "top1.2", "top1.3"} <= stats.keys()


def test_a_draft_without_its_own_features_refuses_alignment(runner: TargetRunner, sequence: Sequence) -> None:
    model = random_draft("moa", runner, seed=2)

    with pytest.raises(ConfigError, match="no context to align"):
        model.predict_aligned(batch_of(runner, sequence), 0.0, None, 2)


def test_fewer_than_one_step_is_refused() -> None:
    with pytest.raises(ConfigError, match="--align-steps 0"):
        TrainConfig(tokens=10, align_steps=0)
