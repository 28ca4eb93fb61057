"""MoA with Target Layer Inference (N > 0) on tiny random targets: inference = training, the
T-step bound through the reused layers, training and checkpoints.

The reused target layers attend to the target's own keys/values at verified positions and to
the draft's at drafted ones; the parallel training pass must compute exactly what drafting
token by token from the caches computes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from drafts.errors import ConfigError
from drafts.moa import model as moa_model
from drafts.moa.masks import verification_starts
from drafts.moa.model import MoADraft
from drafts.neural.base import TrainBatch
from drafts.neural.factory import default_config
from drafts.target.activations import Activations
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import load_draft, save_draft
from drafts.training.tokenize import tokenize_conversation
from drafts.training.trainer import TrainConfig, Trainer
from tests.chat_tokenizer import ChatTokenizer
from tests.drafts.training.conversations import conversations
from tests.tiny_drafts import SIZES, committed, random_draft, target_batch, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens, tiny_model

PROMPT_LEN, LENGTH, PERIOD = 6, 24, 6  # verified: 0..5, then 6, 12, 18
TOKENS = random_tokens(LENGTH, seed=3)
LOSS_MASK = [False] * PROMPT_LEN + [True] * (LENGTH - PROMPT_LEN)
ROUNDS = [(7, 13), (13, 19), (19, 24)]  # (committed, end): drafted positions committed..end-1 share a start
ATOL = 1e-4  # fp32 through up to 2 more layers; logits reach ~5 (in float64 the two agree to 1e-14)


@pytest.fixture(scope="module", params=["llama", "mistral"])
def runner(request: pytest.FixtureRequest) -> TargetRunner:
    return tiny_target_runner(tiny_model(request.param, seed=0, **SIZES), name=f"tiny-{request.param}")


def tli_draft(runner: TargetRunner, n: int, seed: int = 1) -> MoADraft:
    model = random_draft("moa", runner, seed=seed, config=default_config("moa", runner, tli_layers=n))
    assert isinstance(model, MoADraft) and model.tail is not None
    return model


@pytest.fixture
def fixed_period(monkeypatch: pytest.MonkeyPatch) -> torch.Tensor:
    """Every sequence verifies every PERIOD tokens; returns the starts of the test sequence."""
    monkeypatch.setattr(
        moa_model, "sample_periods", lambda batch, generator=None, period_range=None: torch.full((batch,), PERIOD)
    )
    return verification_starts(torch.tensor([LOSS_MASK]), torch.tensor([PERIOD]))[0]


def parallel_logits(model: MoADraft, batch: TrainBatch) -> torch.Tensor:
    """(T, Dv) draft logits of the training pass (causal self-attention: no staircase)."""
    with torch.no_grad():
        return model.parts.logits(model.predict(batch, 1.0, torch.Generator().manual_seed(0))[0])


def drafted_logits(model: MoADraft, runner: TargetRunner, committed_len: int, end: int) -> torch.Tensor:
    """Observe TOKENS[:committed_len] with the target's activations, then step the rest as a chain."""
    model.reset()
    model.observe(TOKENS[:committed_len], 0, committed(runner, TOKENS[:committed_len], model.needs))
    rows = []
    for position in range(committed_len, end):
        logits, _ = model.step(torch.tensor([TOKENS[position]]), torch.tensor([position]), None, None)
        rows.append(logits[0])
    model.end_round()
    return torch.stack(rows)


@pytest.mark.parametrize("n", [1, 2])
def test_drafting_step_by_step_equals_the_parallel_training_pass(
    runner: TargetRunner, fixed_period: torch.Tensor, n: int
) -> None:
    model = tli_draft(runner, n)
    expected = parallel_logits(model, target_batch(runner, TOKENS, LOSS_MASK))
    for committed_len, end in ROUNDS:
        assert (fixed_period[committed_len:end] == committed_len - 1).all()

        stepped = drafted_logits(model, runner, committed_len, end)

        assert torch.allclose(stepped, expected[committed_len:end], atol=ATOL), f"round from {committed_len}"


def test_the_drafted_logits_depend_on_the_target_state_of_the_reused_layers(runner: TargetRunner) -> None:
    model = tli_draft(runner, 1)
    acts = committed(runner, TOKENS[:10], model.needs)
    assert acts.kv is not None
    kv = acts.kv.clone()
    kv[:, -1] += 1.0  # only the last layer: LSA changes too, so compare with the tail's own effect below
    model.reset()
    model.observe(TOKENS[:10], 0, acts)
    before, _ = model.step(torch.tensor([TOKENS[10]]), torch.tensor([10]), None, None)
    model.reset()
    model.observe(TOKENS[:10], 0, Activations(kv=kv))
    after, _ = model.step(torch.tensor([TOKENS[10]]), torch.tensor([10]), None, None)

    assert not torch.allclose(before, after, atol=1e-3)


@pytest.mark.parametrize("n", [1, 2])
def test_no_prediction_reads_target_state_past_its_last_verified_position(
    runner: TargetRunner, fixed_period: torch.Tensor, n: int
) -> None:
    model = tli_draft(runner, n)
    batch = target_batch(runner, TOKENS, LOSS_MASK)
    assert batch.target_kv is not None
    clean = parallel_logits(model, batch)
    generator = torch.Generator().manual_seed(7)
    for i in range(1, LENGTH):
        start = int(fixed_period[i])
        kv = batch.target_kv.clone()
        kv[:, start + 1 :] += 100 * torch.randn(kv[:, start + 1 :].shape, generator=generator)

        noisy = parallel_logits(model, TrainBatch(batch.ids, batch.loss_mask, batch.target_hidden, kv))

        assert torch.allclose(noisy[i], clean[i], atol=ATOL), f"position {i} (start {start}) read later target state"


def test_memory_vectors_alone_are_refused_with_the_fix(runner: TargetRunner) -> None:
    model = tli_draft(runner, 1)
    memory = torch.zeros(4, runner.config.hidden_size)
    model.reset()

    with pytest.raises(ConfigError, match="--tli 0"):
        model.observe(TOKENS[:4], 0, Activations(memory=memory))


def test_the_reused_layers_are_not_parameters_of_the_draft(runner: TargetRunner) -> None:
    plain, tli = random_draft("moa", runner, seed=1), tli_draft(runner, 2)

    assert tli.state_dict().keys() == plain.state_dict().keys()
    assert tli.trainable_parameters() == plain.trainable_parameters()


# -- training and checkpoints -----------------------------------------------------------------


def test_the_loss_falls_when_training_with_one_reused_layer(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0), ChatTokenizer())
    chats = conversations()[:1]
    seq = tokenize_conversation(runner.tokenizer, chats[0], 512)
    assert seq is not None
    cfg = TrainConfig(tokens=20 * len(seq.ids), accum=1, lr=3e-3, warmup_steps=3, checkpoint_every=1000)
    model = tli_draft(runner, 1, seed=0)
    trainer = Trainer(model, runner, chats, cfg, tmp_path)
    assert runner.num_layers - 1 in trainer.request.hidden_layers
    before = trainer._loss([seq])[1]

    trainer.run({})

    after = trainer._loss([seq])[1]
    assert after["loss"] < 0.7 * before["loss"] and after["tail_input"] < before["tail_input"]


def test_a_checkpoint_with_reused_layers_loads_and_computes_the_same_logits(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    model = tli_draft(runner, 1, seed=8)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())  # the checkpoint stores fp16
    save_draft(tmp_path, model, runner.fingerprint, {})

    loaded = load_draft(tmp_path, runner)

    assert isinstance(loaded, MoADraft) and loaded.tail is not None and loaded.cfg.tli_layers == 1
    batch = target_batch(runner, TOKENS, LOSS_MASK)
    assert torch.allclose(parallel_logits(loaded, batch), parallel_logits(model, batch), atol=ATOL)
    assert torch.allclose(drafted_logits(loaded, runner, 13, 16), drafted_logits(model, runner, 13, 16), atol=ATOL)


def test_tli_on_a_gemma3_target_is_refused_with_the_fix() -> None:
    runner = tiny_target_runner(tiny_model("gemma3", seed=0), name="tiny-gemma3")

    with pytest.raises(ConfigError, match=r"'gemma3_text'.*--tli 0"):
        tli_draft(runner, 1)
