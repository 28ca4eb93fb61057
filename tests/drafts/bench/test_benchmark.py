from __future__ import annotations

import pytest

from drafts.bench.benchmark import BenchConfig, run_benchmark
from drafts.bench.methods import run_method
from drafts.decoding.config import DecodeConfig
from drafts.drafters import registry
from drafts.drafters.base import DraftShape
from drafts.drafters.registry import DrafterSpec, register
from drafts.sampling import SamplingConfig
from drafts.target.runner import TargetRunner
from tests.tiny_targets import random_tokens, tiny_model, tiny_runner
from tests.tree_drafter import TargetTop2TreeDrafter

PROMPTS = [random_tokens(10, seed=21), random_tokens(5, seed=22) * 3]


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_runner(tiny_model("llama", seed=5), eos_token_id=63)


@pytest.fixture
def tree_method(monkeypatch: pytest.MonkeyPatch) -> str:
    """The test tree drafter, registered like any drafter (for this test only)."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    register(DrafterSpec("top2-tree", lambda runner, ref: TargetTop2TreeDrafter(runner)))
    return "top2-tree"


def test_every_method_reproduces_ar_at_temperature_zero(runner: TargetRunner, tree_method: str) -> None:
    config = BenchConfig(("ar", "generate", "lookup", "oracle", tree_method), DecodeConfig(max_new_tokens=12))
    ticks: list[str] = []

    result = run_benchmark(runner, PROMPTS, config, ticks.append)

    methods = result["methods"]
    assert set(methods) == {"ar", "generate", "lookup", "oracle", tree_method}
    for name in ("generate", "lookup", "oracle", tree_method):
        assert methods[name]["identical_to_ar"] is True, name
    assert methods["ar"]["new_tokens"] == 24 and methods["ar"]["tau"] == 1.0
    assert methods["oracle"]["accept_rate"] == 1.0
    assert methods[tree_method]["tau"] > 2.0
    assert sorted(ticks) == sorted(["ar", "generate", "lookup", "oracle", tree_method] * 2)


def test_the_oracle_reports_the_ideal_speedup_of_its_chain(runner: TargetRunner) -> None:
    config = BenchConfig(("ar", "oracle"), DecodeConfig(max_new_tokens=8), ideal_repeats=1)

    oracle = run_benchmark(runner, PROMPTS[:1], config)["methods"]["oracle"]

    assert oracle["ideal_speedup"] > 0
    assert oracle["one_token_ms"] > 0 and oracle["verify_ms_gamma_plus_1"] > 0
    assert oracle["fraction_of_ideal"] == pytest.approx(oracle["speedup"] / oracle["ideal_speedup"])


def test_at_temperature_above_zero_the_oracle_replays_the_greedy_output(runner: TargetRunner) -> None:
    decode = DecodeConfig(12, SamplingConfig(temperature=1.0, seed=0), DraftShape(gamma=3))

    result = run_benchmark(runner, PROMPTS[:1], BenchConfig(("ar", "oracle"), decode, ideal_repeats=1))

    assert result["methods"]["oracle"]["identical_to_ar"] is None  # sampled: no token-level identity
    assert 0.0 <= result["methods"]["oracle"]["accept_rate"] <= 1.0


def test_run_method_builds_a_registered_drafter_by_name(runner: TargetRunner, tree_method: str) -> None:
    config = DecodeConfig(max_new_tokens=10)

    ar = run_method("ar", runner, PROMPTS[0], config, None)
    tree = run_method(tree_method, runner, PROMPTS[0], config, None)

    assert tree.tokens == ar.tokens
    assert tree.target_forwards < ar.target_forwards
