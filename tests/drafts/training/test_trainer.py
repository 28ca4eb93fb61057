"""The training loop on a tiny random Llama with a character-level chat tokenizer."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from drafts.errors import CheckpointError, ConfigError
from drafts.neural.base import NeuralDraft
from drafts.neural.factory import KINDS
from drafts.nn.blocks import DecoderBlock
from drafts.target.runner import TargetRunner
from drafts.training.losses import distillation_loss
from drafts.training.tokenize import tokenize_conversation
from drafts.training.trainer import STATE_FILE, TrainConfig, Trainer, TrainState
from tests.chat_tokenizer import ChatTokenizer
from tests.drafts.training.conversations import conversations
from tests.tiny_drafts import random_draft, target_batch, tiny_llama, tiny_target_runner


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0), ChatTokenizer())


def evaluation_loss(model: NeuralDraft, runner: TargetRunner, cfg: TrainConfig) -> float:
    """The loss on the first conversation with fixed random draws (no staircase, fixed periods)."""
    seq = tokenize_conversation(runner.tokenizer, conversations()[0], cfg.max_len)
    assert seq is not None
    batch = target_batch(runner, seq.ids.tolist(), seq.loss_mask.tolist())
    with torch.no_grad():
        pred = model.predict(batch, 1.0, torch.Generator().manual_seed(0))
        return distillation_loss(pred, batch.target_hidden, batch.loss_mask, model.parts, cfg.weights)[1]["loss"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_loss_falls_when_training_on_one_repeated_conversation(
    runner: TargetRunner, kind: str, tmp_path: Path
) -> None:
    chats = conversations()[:1]
    seq = tokenize_conversation(runner.tokenizer, chats[0], 512)
    assert seq is not None
    cfg = TrainConfig(tokens=30 * len(seq.ids), accum=1, lr=3e-3, warmup_steps=3, checkpoint_every=1000)
    model = random_draft(kind, runner, seed=0)
    trainer = Trainer(model, runner, chats, cfg, tmp_path)
    before = evaluation_loss(model, runner, cfg)

    state = trainer.run({})

    assert state.step == 30
    assert evaluation_loss(model, runner, cfg) < 0.7 * before


def small_run(tokens: int, checkpoint_every: int) -> TrainConfig:
    """Two conversations (~100 tokens) per optimizer step until ``tokens`` have been seen."""
    return TrainConfig(tokens=tokens, accum=2, lr=3e-3, warmup_steps=2, checkpoint_every=checkpoint_every, seed=3)


class Interrupted(Exception):
    pass


@pytest.mark.parametrize("kind", KINDS)
def test_an_interrupted_and_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(
    runner: TargetRunner, kind: str, tmp_path: Path
) -> None:
    cfg = small_run(tokens=700, checkpoint_every=3)  # seven steps, two epochs of the four conversations
    whole = random_draft(kind, runner, seed=1)
    steps = Trainer(whole, runner, conversations(), cfg, tmp_path / "whole").run({}).step
    assert steps > 4

    def stop_after_the_checkpoint(state: TrainState, n_tokens: int) -> None:  # killed after step 4
        if state.step == 4:
            raise Interrupted

    with pytest.raises(Interrupted):
        Trainer(random_draft(kind, runner, seed=1), runner, conversations(), cfg, tmp_path / "split").run(
            {}, stop_after_the_checkpoint
        )
    resumed_model = random_draft(kind, runner, seed=99)  # a new process: other initial weights
    resumed = Trainer(resumed_model, runner, conversations(), cfg, tmp_path / "split")
    resumed.resume()
    assert resumed.state.step == 3  # the last checkpoint

    state = resumed.run({})

    assert state.step == steps
    expected = dict(whole.named_parameters())
    for name, parameter in resumed_model.named_parameters():
        assert torch.equal(parameter, expected[name]), name


def test_a_run_trains_until_its_token_budget_and_leaves_its_state(runner: TargetRunner, tmp_path: Path) -> None:
    cfg = small_run(tokens=250, checkpoint_every=100)

    state = Trainer(random_draft("moa", runner), runner, conversations(), cfg, tmp_path).run({})

    assert state.tokens_seen >= 250 and state.tokens_seen - 250 < 2 * 63  # stops at the step that crosses it
    assert (tmp_path / STATE_FILE).is_file()


def test_a_timed_run_stops_at_its_minutes_before_its_tokens_and_leaves_its_state(
    runner: TargetRunner, tmp_path: Path
) -> None:
    cfg = dataclasses.replace(small_run(tokens=10**9, checkpoint_every=100), max_minutes=0.5 / 60)

    state = Trainer(random_draft("moa", runner), runner, conversations(), cfg, tmp_path).run({})

    assert 0.5 <= state.wall_s < 0.5 + 30  # the step that crosses the half second is the last
    assert state.tokens_seen < 10**9 and (tmp_path / STATE_FILE).is_file()


def test_the_schedule_follows_whichever_budget_is_further_along() -> None:
    cfg = TrainConfig(tokens=1000, max_minutes=2.0)

    assert cfg.progress(tokens_seen=100, wall_s=60.0) == pytest.approx(0.5)  # time leads
    assert cfg.progress(tokens_seen=800, wall_s=60.0) == pytest.approx(0.8)  # tokens lead
    assert cfg.progress(tokens_seen=2000, wall_s=0.0) == 1.0
    assert TrainConfig(tokens=1000).progress(tokens_seen=100, wall_s=10**6) == pytest.approx(0.1)  # no time budget


def test_a_time_budget_that_is_not_positive_is_refused_with_its_fix() -> None:
    with pytest.raises(ConfigError, match="--max-minutes 0"):
        TrainConfig(tokens=1000, max_minutes=0)


def test_resuming_without_a_saved_run_is_refused_with_a_fix(runner: TargetRunner, tmp_path: Path) -> None:
    cfg = small_run(tokens=100, checkpoint_every=1)
    trainer = Trainer(random_draft("moa", runner), runner, conversations(), cfg, tmp_path)

    with pytest.raises(CheckpointError, match="without --resume"):
        trainer.resume()


def test_a_moa_run_loses_the_same_with_the_mean_taken_before_the_lsa_down_projection(
    runner: TargetRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trainer's cheaper LSA (``DecoderBlock.forward_mean``) against the block's plain output
    averaged over the layers, as before: the same losses at every step of a seeded run."""
    cfg = small_run(tokens=700, checkpoint_every=1000)

    def losses(out: Path) -> list[float]:
        seen: list[float] = []
        Trainer(random_draft("moa", runner, seed=1), runner, conversations(), cfg, out).run(
            {}, lambda state, n: seen.append(state.last["loss"])
        )
        return seen

    fused = losses(tmp_path / "fused")
    with monkeypatch.context() as m:
        m.setattr(DecoderBlock, "forward_mean", lambda self, x, rope, mask: self(x, rope, mask).mean(dim=1))
        plain = losses(tmp_path / "plain")

    assert len(fused) == len(plain) > 4
    assert fused == pytest.approx(plain, rel=1e-5)


def test_a_batch_pads_each_sequence_after_its_end_and_keeps_the_padding_off_the_loss(
    runner: TargetRunner, tmp_path: Path
) -> None:
    cfg = TrainConfig(tokens=1000, batch=2)
    trainer = Trainer(random_draft("moa", runner), runner, conversations(), cfg, tmp_path)
    seqs = [tokenize_conversation(runner.tokenizer, c, 512) for c in conversations()[:2]]
    assert seqs[0] is not None and seqs[1] is not None and len(seqs[0].ids) != len(seqs[1].ids)

    batch = trainer._batch([seqs[0], seqs[1]])

    alone = [trainer._batch([seq]) for seq in (seqs[0], seqs[1])]
    for row, (seq, one) in enumerate(zip(seqs, alone, strict=True)):
        n = len(seq.ids)
        assert torch.equal(batch.ids[row, :n], seq.ids) and torch.equal(batch.loss_mask[row, :n], seq.loss_mask)
        assert not batch.loss_mask[row, n:].any()
        torch.testing.assert_close(batch.target_hidden[row, :n], one.target_hidden[0], atol=1e-5, rtol=0)
        assert batch.target_kv is not None and one.target_kv is not None
        torch.testing.assert_close(batch.target_kv[row, :n], one.target_kv[0], atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_batched_run_counts_real_tokens_and_its_loss_falls(runner: TargetRunner, kind: str, tmp_path: Path) -> None:
    chats = conversations()[:2]
    seqs = [tokenize_conversation(runner.tokenizer, c, 512) for c in chats]
    per_step = sum(len(s.ids) for s in seqs if s is not None)  # one batch of both conversations a step
    cfg = TrainConfig(tokens=20 * per_step, accum=1, batch=2, lr=3e-3, warmup_steps=3, checkpoint_every=1000)
    model = random_draft(kind, runner, seed=0)
    before = evaluation_loss(model, runner, cfg)

    state = Trainer(model, runner, chats, cfg, tmp_path).run({})

    assert (state.step, state.tokens_seen) == (20, 20 * per_step)
    assert evaluation_loss(model, runner, cfg) < 0.8 * before


def test_a_batch_or_accumulation_below_one_is_refused_with_its_fix() -> None:
    with pytest.raises(ConfigError, match="--batch 0"):
        TrainConfig(tokens=1000, batch=0)


def test_the_conversations_fetched_ahead_across_epoch_ends_are_the_ones_the_run_reads(
    runner: TargetRunner, tmp_path: Path
) -> None:
    trainer = Trainer(random_draft("eagle", runner), runner, conversations(), small_run(100, 100), tmp_path)
    trainer.state.cursor = len(conversations()) - 1  # one left in epoch 0

    ahead = trainer._upcoming(6)
    read = [trainer._next_sequence() for _ in range(6)]

    assert len(ahead) == 6 and trainer.state.epoch == 2  # 1 + 4 + 1 of the four conversations
    for index, seq in zip(ahead, read, strict=True):
        expected = tokenize_conversation(runner.tokenizer, conversations()[index], 512)
        assert expected is not None and torch.equal(seq.ids, expected.ids)
