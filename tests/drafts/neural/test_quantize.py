"""int8 dynamic quantization of a draft: its Linear layers and LM head rows, opt-in through config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.speculative import generate
from drafts.drafters.base import DraftShape
from drafts.errors import CheckpointError, ConfigError
from drafts.neural.base import NeuralDraft
from drafts.neural.checkpoint import CONFIG_FILE, load_draft
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.kinds import KIND_NAMES
from drafts.neural.quantize import INT8, is_quantized, quantize_int8
from drafts.sampling import SamplingConfig
from drafts.target.activations import Activations
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import save_draft
from tests.drafts.neural.test_drafter import agreeable, predictable_target
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


# -- int8 drafts on EAGLE-2 trees (the CPU's small trees: drafts/bench/results/2026-12-02-s8/cpu-shapes) ----------
TREES = ["2,2,3", "3,2,4", "3,3,6", "4,2,8"]
MAX_NEW = 20


def int8_drafter(kind: str, runner: TargetRunner, draft: NeuralDraft | None = None) -> NeuralDrafter:
    return NeuralDrafter(quantize_int8(draft if draft is not None else random_draft(kind, runner, seed=5)))


@pytest.mark.parametrize("text", TREES)
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_an_int8_draft_grows_trees_of_the_asked_shape_all_connected_to_the_root(kind: str, text: str) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    drafter, shape = int8_drafter(kind, runner), DraftShape.parse_tree(text)
    drafter.begin(PROMPT)
    drafter.observe(PROMPT[:-1], committed(runner, PROMPT[:-1], drafter.needs), PROMPT[-1])

    tree = drafter.propose(PROMPT, shape, SamplingConfig(), None)

    assert tree.size == min(shape.tree_total, shape.tree_top_k + (shape.tree_depth - 1) * shape.tree_top_k**2)
    assert all(tree.path(node)[0] in tree.children(0) for node in range(1, tree.size + 1))
    assert max(tree.depths) <= shape.tree_depth
    assert all(len(tree.children(node)) <= shape.tree_top_k for node in range(tree.size + 1))


@pytest.mark.parametrize("text", TREES)
@pytest.mark.parametrize("kind", KIND_NAMES)
def test_at_temperature_zero_an_int8_draft_on_trees_gives_the_autoregressive_tokens(kind: str, text: str) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    config = DecodeConfig(MAX_NEW, SamplingConfig(), DraftShape.parse_tree(text))

    spec = generate(runner, int8_drafter(kind, runner), PROMPT, config)

    assert spec.tokens == generate_autoregressive(runner, PROMPT, config).tokens
    assert len(spec.tokens) == MAX_NEW and spec.draft_rounds


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_an_agreeable_int8_draft_gets_whole_tree_paths_accepted_and_still_gives_the_autoregressive_tokens(
    kind: str,
) -> None:
    runner = predictable_target()
    config = DecodeConfig(MAX_NEW, SamplingConfig(), DraftShape.parse_tree("3,2,6"))
    ar = generate_autoregressive(runner, PROMPT, config)

    spec = generate(runner, int8_drafter(kind, runner, agreeable(random_draft(kind, runner, seed=5))), PROMPT, config)

    assert spec.tokens == ar.tokens
    assert len(spec.draft_rounds[0].accepted) == 3  # a whole root-to-leaf path
    assert spec.target_forwards < ar.target_forwards
