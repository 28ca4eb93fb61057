"""int8 dynamic quantization of a draft: its Linear layers and LM head rows, opt-in through config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from drafts.errors import CheckpointError, ConfigError
from drafts.neural.base import NeuralDraft
from drafts.neural.checkpoint import CONFIG_FILE, load_draft
from drafts.neural.kinds import KIND_NAMES
from drafts.neural.quantize import INT8, is_quantized, quantize_int8
from drafts.target.activations import Activations
from drafts.training.checkpoint import save_draft
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner

PROMPT = [3, 9, 14, 1, 7, 22, 5]


def chain_logits(model: NeuralDraft, acts: Activations, steps: int = 3) -> torch.Tensor:
    """Logits of a greedy chain of ``steps`` after observing PROMPT (its activations ``acts``): (steps, Dv)."""
    model.reset()
    model.observe(PROMPT, 0, acts)
    token, state, rows = PROMPT[-1], model.initial_state(), []
    for depth in range(steps):
        logits, state = model.step(torch.tensor([token]), torch.tensor([len(PROMPT) - 1 + depth]), None, state)
        rows.append(logits[0])
        token = int(model.parts.d2t[int(logits[0].argmax())])
    model.end_round()
    return torch.stack(rows)


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_an_int8_draft_drafts_close_to_its_fp32_self(kind: str) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    fp32, int8 = random_draft(kind, runner, seed=1), random_draft(kind, runner, seed=1)
    acts = committed(runner, PROMPT)
    quantize_int8(int8)

    assert is_quantized(int8) and not is_quantized(fp32)
    assert not any(type(m) is torch.nn.Linear for m in int8.modules())  # every Linear was swapped
    a, b = chain_logits(fp32, acts), chain_logits(int8, acts)
    assert not torch.equal(a, b)  # it is really another computation
    assert torch.nn.functional.cosine_similarity(a, b, dim=-1).min() > 0.98


def test_quantizing_refuses_a_draft_that_is_not_cpu_float32() -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    model = random_draft("eagle", runner).to(torch.bfloat16)
    model.parts.head_weight = model.parts.head_weight.bfloat16()
    with pytest.raises(ConfigError, match="float32"):
        quantize_int8(model)


def test_a_checkpoint_asking_for_int8_loads_quantized(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    save_draft(tmp_path, random_draft("moa", runner, seed=1), runner.fingerprint, {"tokens": 1})
    assert not is_quantized(load_draft(tmp_path, runner))
    meta = json.loads((tmp_path / CONFIG_FILE).read_text())
    (tmp_path / CONFIG_FILE).write_text(json.dumps(meta | {"inference": {"quantize": INT8}}))

    assert is_quantized(load_draft(tmp_path, runner))


def test_an_unknown_quantization_is_refused_with_the_known_one(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    save_draft(tmp_path, random_draft("eagle", runner, seed=1), runner.fingerprint, {"tokens": 1})
    meta = json.loads((tmp_path / CONFIG_FILE).read_text())
    (tmp_path / CONFIG_FILE).write_text(json.dumps(meta | {"inference": {"quantize": "int4"}}))

    with pytest.raises(CheckpointError, match=INT8):
        load_draft(tmp_path, runner)


def test_a_client_asking_for_int8_on_a_cpu_gets_it_from_an_fp32_checkpoint(tmp_path: Path) -> None:
    """moa-chat's ``draft_quantize = "int8"`` (the default): the shipped fp32 checkpoint, int8 on a CPU."""
    runner = tiny_target_runner(tiny_llama(seed=0))
    save_draft(tmp_path, random_draft("moa", runner, seed=1), runner.fingerprint, {"tokens": 1})

    assert is_quantized(load_draft(tmp_path, runner, int8_on_cpu=True))
    assert not is_quantized(load_draft(tmp_path, runner, int8_on_cpu=False))


def test_int8_on_cpu_leaves_a_draft_in_another_dtype_as_it_is(tmp_path: Path) -> None:
    """Only CPU float32 has int8 kernels: a bfloat16 run (or a GPU) keeps the checkpoint's own layers."""
    runner = tiny_target_runner(tiny_llama(seed=0))
    save_draft(tmp_path, random_draft("eagle", runner, seed=1), runner.fingerprint, {"tokens": 1})
    runner.dtype = torch.bfloat16

    assert not is_quantized(load_draft(tmp_path, runner, int8_on_cpu=True))
