"""The independent draft on a tiny random Llama: inference matches training, and its size matches
MoA's so that the comparison is at equal trainable parameters."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import LlamaConfig

from drafts.independent.model import IndependentDraft
from drafts.neural.base import TrainBatch
from drafts.neural.factory import build_draft, default_config
from drafts.neural.target_parts import TargetParts
from drafts.target.activations import NOTHING, Activations
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

PROMPT = random_tokens(10, seed=6)
DRAFTED = [7, 30, 2, 51]  # the root, then three drafted tokens
ATOL = 1e-5
SMOLLM2 = LlamaConfig(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    head_dim=64,
)


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


@pytest.fixture(scope="module")
def draft(runner: TargetRunner) -> IndependentDraft:
    model = random_draft("independent", runner, seed=4)
    assert isinstance(model, IndependentDraft)
    return model


def predicted_logits(model: IndependentDraft, tokens: list[int]) -> torch.Tensor:
    T = len(tokens)
    batch = TrainBatch(
        torch.tensor([tokens]), torch.zeros(1, T, dtype=torch.bool), torch.zeros(1, T, model.parts.hidden)
    )
    with torch.no_grad():
        return model.parts.logits(model.predict(batch, 0.0, None)[0])  # (T, Dv)


def test_the_independent_draft_reads_no_target_activations(draft: IndependentDraft) -> None:
    assert draft.needs == NOTHING


def test_drafting_step_by_step_equals_the_parallel_training_computation(draft: IndependentDraft) -> None:
    draft.reset()
    draft.observe(PROMPT, 0, Activations())

    rows = []
    for depth, token in enumerate(DRAFTED):
        logits, _ = draft.step(torch.tensor([token]), torch.tensor([len(PROMPT) + depth]), None, None)
        rows.append(logits[0])
    draft.end_round()

    expected = predicted_logits(draft, PROMPT + DRAFTED)[len(PROMPT) :]
    assert torch.allclose(torch.stack(rows), expected, atol=ATOL)


def trainable(kind: str, config: dict[str, object], hidden: int) -> int:
    with torch.device("meta"):  # sizes only: nothing is allocated
        parts = TargetParts(torch.nn.Embedding(1, hidden), torch.zeros(1, hidden), torch.zeros(1, dtype=torch.long), 1)
        return build_draft(kind, config, parts).trainable_parameters()


@pytest.mark.parametrize("target", ["tiny", "smollm2"])
def test_the_independent_draft_has_moas_trainable_parameters_within_ten_percent(
    runner: TargetRunner, target: str
) -> None:
    geometry = runner if target == "tiny" else SimpleNamespace(config=SMOLLM2)
    hidden = geometry.config.hidden_size

    independent = trainable("independent", default_config("independent", geometry), hidden)

    moa = trainable("moa", default_config("moa", geometry), hidden)
    assert abs(independent - moa) <= 0.1 * moa, f"independent {independent:,} vs moa {moa:,}"
