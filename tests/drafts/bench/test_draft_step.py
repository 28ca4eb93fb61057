"""``python -m drafts.bench.draft_step`` on tiny drafts: every draft timed, split and compared with the first."""

from __future__ import annotations

import pytest
import torch

from drafts.bench.draft_step import StepBenchConfig, format_table, run
from drafts.errors import ConfigError
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.quantize import quantize_int8
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner


def test_each_draft_gets_its_cost_per_token_split_and_its_ratio_to_the_first() -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    fp32 = random_draft("eagle", runner, seed=1)
    int8 = quantize_int8(random_draft("eagle", runner, seed=1))
    small = random_draft("moa", runner, seed=2, d2t=torch.arange(0, 64, 2))  # half the vocabulary
    drafters = {"eagle": NeuralDrafter(fp32), "eagle-int8": NeuralDrafter(int8), "moa-half": NeuralDrafter(small)}
    prompts = [[3, 9, 14, 1, 7], [5, 6, 7, 8, 9, 10]]
    tokens = [1, 2, 3, 4]

    rows = run(runner, drafters, prompts, tokens, StepBenchConfig(rounds=2, gamma=3, flush_mb=1))

    assert list(rows) == list(drafters)
    assert rows["eagle"]["ratio_cold"] == 1.0 and rows["eagle"]["ratio_warm"] == 1.0
    for row in rows.values():
        assert row["ms_per_token_cold"] > 0 and 0 < row["head_ms_cold"] < row["ms_per_token_cold"]
        assert row["body_ms_warm"] > 0 and row["profiled_operator_calls"] > 0
    assert [rows[n]["int8"] for n in rows] == [False, True, False]
    assert rows["eagle"]["coverage"] == 1.0 and rows["moa-half"]["coverage"] == 0.5
    assert rows["moa-half"]["draft_vocab"] == 32 and fp32.parts.head is None  # the timing wrapper is removed
    assert "eagle-int8" in format_table({"methods": rows})


def test_only_trained_drafts_are_timed() -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    with pytest.raises(ConfigError, match="trained drafts only"):
        run(runner, {"lookup": object()}, [[1, 2]], [], StepBenchConfig())
