"""The frozen tail of Target Layer Inference: the target's own last layers, re-implemented.

On a plain causal sequence, with the target's true keys/values as the context of every query,
the tail must compute what the target's own decoder layers and final norm compute.
"""

from __future__ import annotations

import pytest
import torch

from drafts.errors import ConfigError
from drafts.moa.tail import TargetTail
from tests.tiny_drafts import committed
from tests.tiny_targets import random_tokens, tiny_model, tiny_runner

TOKENS = random_tokens(12, seed=5)
ATOL = 1e-5


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("architecture", ["llama", "qwen2", "mistral"])
def test_the_tail_over_true_keys_and_values_equals_the_targets_own_last_layers(architecture: str, n: int) -> None:
    model = tiny_model(architecture, seed=0)
    runner = tiny_runner(model)
    L = runner.num_layers
    acts = committed(runner, TOKENS)
    with torch.no_grad():
        hidden = model(torch.tensor([TOKENS]), output_hidden_states=True).hidden_states  # L + 1 of (1, T, H)
    # start[i] = i - 1: query i reads the target's keys/values before it and its own at i (causal)
    starts = (torch.arange(len(TOKENS)) - 1).clamp_min(0)[None]  # (1, T)
    assert acts.kv is not None

    with torch.no_grad():
        final = TargetTail(model, n).parallel(hidden[L - n], acts.kv[None], starts)

    assert torch.allclose(final, hidden[L], atol=ATOL)


def test_the_tail_is_a_set_of_references_to_the_targets_modules_not_copies() -> None:
    model = tiny_model("llama", seed=0)

    tail = TargetTail(model, 2)

    assert [t.layer for t in tail.layers] == list(model.model.layers[-2:])
    assert tail.norm is model.model.norm


def test_an_architecture_with_other_decoder_layers_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match=r"'gemma3_text'.*--tli 0"):
        TargetTail(tiny_model("gemma3", seed=0), 1)


@pytest.mark.parametrize("n", [0, 3])
def test_a_tail_of_no_layers_or_of_every_layer_is_refused(n: int) -> None:
    with pytest.raises(ConfigError, match="reuses 1 to 2 of the target's 3 layers"):
        TargetTail(tiny_model("llama", seed=0), n)
