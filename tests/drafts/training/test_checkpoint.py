"""Draft checkpoints: a round trip through fp16 files, and refusals that say how to fix them."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from drafts.errors import CheckpointError
from drafts.neural.base import NeuralDraft
from drafts.neural.factory import KINDS
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import CONFIG_FILE, WEIGHTS_FILE, load_draft, read_meta, save_draft
from tests.tiny_drafts import committed, random_draft, target_batch, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

TOKENS = random_tokens(20, seed=10)
LOSS_MASK = [False] * 8 + [True] * 12
REDUCED = torch.tensor([0, 3, 5, 8, 13, 21, 34, 55, 60, 63])  # a 10-token draft vocabulary


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0), name="tiny-llama")


@pytest.fixture(scope="module")
def other_runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=1), name="other-llama")


def saved(runner: TargetRunner, out: Path, kind: str = "moa", d2t: torch.Tensor | None = None) -> NeuralDraft:
    model = random_draft(kind, runner, seed=8, d2t=d2t)
    save_draft(out, model, runner.fingerprint, {"tokens": 123})
    return model


def through_fp16(model: NeuralDraft) -> NeuralDraft:
    """A copy with every weight rounded to fp16 and back, as the checkpoint stores them."""
    rounded = copy.deepcopy(model)
    with torch.no_grad():
        for p in rounded.parameters():
            p.copy_(p.half().float())
    return rounded


def outputs(model: NeuralDraft, runner: TargetRunner) -> tuple[torch.Tensor, torch.Tensor]:
    """(training prediction (T, H), drafted logits after the first 12 tokens (2, Dv))."""
    with torch.no_grad():
        pred = model.predict(target_batch(runner, TOKENS, LOSS_MASK), 1.0, torch.Generator().manual_seed(0))[0]
    model.reset()
    model.observe(TOKENS[:12], 0, committed(runner, TOKENS[:12], model.needs))
    state, rows = model.initial_state(), []
    for depth, token in enumerate(TOKENS[12:14]):
        logits, state = model.step(torch.tensor([token]), torch.tensor([12 + depth]), None, state)
        rows.append(logits[0])
    model.end_round()
    return pred, torch.stack(rows)


@pytest.mark.parametrize("kind", KINDS)
def test_a_loaded_checkpoint_computes_what_the_saved_draft_computes_in_fp16(
    runner: TargetRunner, kind: str, tmp_path: Path
) -> None:
    model = saved(runner, tmp_path, kind, d2t=REDUCED)

    loaded = load_draft(tmp_path, runner)

    assert type(loaded) is type(model) and loaded.config_dict() == model.config_dict()
    assert torch.equal(loaded.parts.d2t, REDUCED)
    for got, expected in zip(outputs(loaded, runner), outputs(through_fp16(model), runner), strict=True):
        assert torch.allclose(got, expected, atol=1e-5)


def test_weights_are_stored_in_fp16_and_no_temporary_file_is_left(runner: TargetRunner, tmp_path: Path) -> None:
    saved(runner, tmp_path)

    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([CONFIG_FILE, WEIGHTS_FILE])
    from safetensors.torch import load_file

    tensors = load_file(str(tmp_path / WEIGHTS_FILE))
    assert {t.dtype for name, t in tensors.items() if name != "d2t"} == {torch.float16}
    meta = read_meta(tmp_path)
    assert meta["kind"] == "moa" and meta["training"] == {"tokens": 123}
    assert meta["target"]["name"] == "tiny-llama"


def test_a_checkpoint_for_another_target_is_refused_naming_both(
    runner: TargetRunner, other_runner: TargetRunner, tmp_path: Path
) -> None:
    saved(runner, tmp_path)

    with pytest.raises(CheckpointError) as refusal:
        load_draft(tmp_path, other_runner)

    message = str(refusal.value)
    assert "tiny-llama" in message and "other-llama" in message
    assert "moa-train --target" in message  # the fix


def test_a_missing_checkpoint_is_refused_with_a_fix(runner: TargetRunner, tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no draft checkpoint at .*moa-train"):
        load_draft(tmp_path / "nowhere", runner)


def test_a_corrupt_config_is_refused_with_a_fix(runner: TargetRunner, tmp_path: Path) -> None:
    saved(runner, tmp_path)
    (tmp_path / CONFIG_FILE).write_text('{"format": 1, "kind": "mo')

    with pytest.raises(CheckpointError, match="not valid JSON.*retrain or restore"):
        load_draft(tmp_path, runner)


def test_a_checkpoint_of_another_format_is_refused(runner: TargetRunner, tmp_path: Path) -> None:
    saved(runner, tmp_path)
    meta = json.loads((tmp_path / CONFIG_FILE).read_text())
    (tmp_path / CONFIG_FILE).write_text(json.dumps(meta | {"format": 99}))

    with pytest.raises(CheckpointError, match="format 99"):
        load_draft(tmp_path, runner)


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_missing_or_damaged_weights_are_refused_with_a_fix(runner: TargetRunner, tmp_path: Path, damage: str) -> None:
    saved(runner, tmp_path)
    weights = tmp_path / WEIGHTS_FILE
    if damage == "missing":
        weights.unlink()
    else:
        weights.write_bytes(weights.read_bytes()[:100])

    with pytest.raises(CheckpointError, match="incomplete or corrupt"):
        load_draft(tmp_path, runner)


def test_weights_of_another_kind_of_draft_are_refused(runner: TargetRunner, tmp_path: Path) -> None:
    saved(runner, tmp_path, "moa")
    meta = json.loads((tmp_path / CONFIG_FILE).read_text())
    eagle = random_draft("eagle", runner)
    (tmp_path / CONFIG_FILE).write_text(json.dumps(meta | {"kind": "eagle", "config": eagle.config_dict()}))

    with pytest.raises(CheckpointError, match="do not match an? eagle draft"):
        load_draft(tmp_path, runner)


def test_weights_of_another_size_are_refused(runner: TargetRunner, tmp_path: Path) -> None:
    saved(runner, tmp_path, "moa")
    meta = json.loads((tmp_path / CONFIG_FILE).read_text())
    (tmp_path / CONFIG_FILE).write_text(json.dumps(meta | {"config": meta["config"] | {"intermediate": 96}}))

    with pytest.raises(CheckpointError, match="weights do not match"):
        load_draft(tmp_path, runner)
