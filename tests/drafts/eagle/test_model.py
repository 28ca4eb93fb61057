"""The EAGLE draft on a tiny random Llama: inference matches its (noise-free) training computation,
and its size matches MoA's so that the comparison is at equal trainable parameters."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import LlamaConfig

from drafts.eagle.model import EagleDraft
from drafts.neural.base import TrainBatch
from drafts.neural.factory import build_draft, default_config
from drafts.neural.target_parts import TargetParts
from drafts.target.activations import Activations
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import committed
from tests.tiny_targets import random_tokens

PROMPT = random_tokens(10, seed=5)
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


def features(runner: TargetRunner, tokens: list[int]) -> torch.Tensor:
    """(T, H) the target's final hidden states: EAGLE's features."""
    return committed(runner, tokens).hidden[runner.num_layers]


def predicted_logits(model: EagleDraft, tokens: list[int], feats: torch.Tensor) -> torch.Tensor:
    """(T, Dv) logits of the training computation (teacher forcing on the true features)."""
    T = len(tokens)
    batch = TrainBatch(torch.tensor([tokens]), torch.zeros(1, T, dtype=torch.bool), feats.clone()[None])
    with torch.no_grad():
        return model.parts.logits(model.predict(batch, 1.0, torch.Generator().manual_seed(0))[0])


def observed(model: EagleDraft, runner: TargetRunner, prompt: list[int]) -> None:
    model.reset()
    model.observe(prompt, 0, Activations({runner.num_layers: features(runner, prompt)}))


def test_the_first_drafted_token_matches_training(runner: TargetRunner, draft: EagleDraft, no_noise: None) -> None:
    observed(draft, runner, PROMPT)

    logits, _ = draft.step(torch.tensor(DRAFTED[:1]), torch.tensor([len(PROMPT)]), None, draft.initial_state())
    draft.end_round()

    expected = predicted_logits(draft, PROMPT + DRAFTED[:1], features(runner, PROMPT + DRAFTED[:1]))
    assert torch.allclose(logits[0], expected[len(PROMPT)], atol=ATOL)


def test_drafting_on_the_true_features_equals_the_parallel_training_computation(
    runner: TargetRunner, draft: EagleDraft, no_noise: None
) -> None:
    tokens = PROMPT + DRAFTED
    feats = features(runner, tokens)  # the features the target would give the drafted tokens
    observed(draft, runner, PROMPT)

    rows = []
    for depth, token in enumerate(DRAFTED):
        position = len(PROMPT) + depth
        logits, _ = draft.step(torch.tensor([token]), torch.tensor([position]), None, feats[position - 1 : position])
        rows.append(logits[0])
    draft.end_round()

    expected = predicted_logits(draft, tokens, feats)[len(PROMPT) :]
    assert torch.allclose(torch.stack(rows), expected, atol=ATOL)


def test_a_round_starts_from_the_last_committed_feature_and_continues_on_its_own_predictions(
    runner: TargetRunner, draft: EagleDraft
) -> None:
    observed(draft, runner, PROMPT)

    logits, state = draft.step(torch.tensor(DRAFTED[:1]), torch.tensor([len(PROMPT)]), None, draft.initial_state())
    draft.end_round()

    assert torch.equal(draft.initial_state(), features(runner, PROMPT)[-1:])
    assert torch.allclose(draft.parts.logits(state), logits)  # the next token's input: the predicted feature


def test_training_noise_is_drawn_from_the_generator(runner: TargetRunner, draft: EagleDraft) -> None:
    feats = features(runner, PROMPT)
    batch = TrainBatch(torch.tensor([PROMPT]), torch.ones(1, len(PROMPT), dtype=torch.bool), feats.clone()[None])

    with torch.no_grad():
        a = draft.predict(batch, 0.0, torch.Generator().manual_seed(1))
        b = draft.predict(batch, 0.0, torch.Generator().manual_seed(1))
        c = draft.predict(batch, 0.0, torch.Generator().manual_seed(2))

    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


def trainable(kind: str, config: dict[str, object], hidden: int) -> int:
    with torch.device("meta"):  # sizes only: nothing is allocated
        parts = TargetParts(torch.nn.Embedding(1, hidden), torch.zeros(1, hidden), torch.zeros(1, dtype=torch.long), 1)
        return build_draft(kind, config, parts).trainable_parameters()


@pytest.mark.parametrize("target", ["tiny", "smollm2"])
def test_eagle_has_moas_trainable_parameters_within_ten_percent(runner: TargetRunner, target: str) -> None:
    geometry = runner if target == "tiny" else SimpleNamespace(config=SMOLLM2)
    hidden = geometry.config.hidden_size

    eagle = trainable("eagle", default_config("eagle", geometry), hidden)

    moa = trainable("moa", default_config("moa", geometry), hidden)
    assert abs(eagle - moa) <= 0.1 * moa, f"eagle {eagle:,} vs moa {moa:,}"
