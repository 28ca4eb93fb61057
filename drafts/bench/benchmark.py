"""A benchmark run: every method on every prompt, interleaved, so ratios survive a noisy machine."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from drafts.bench.methods import PLAIN_METHODS, run_method
from drafts.bench.stats import MethodStats
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.drafters.registry import drafter_spec
from drafts.target.runner import TargetRunner


@dataclass(frozen=True)
class BenchConfig:
    methods: tuple[str, ...]  # must include "ar"; the order rotates from prompt to prompt
    decode: DecodeConfig
    ideal_repeats: int = 3  # timings of the 1-token vs (gamma+1)-token forward per prompt (oracle)


def run_benchmark(
    runner: TargetRunner,
    prompts: list[list[int]],
    config: BenchConfig,
    tick: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Run every method on every prompt; returns ``{"methods": {...}, "ideal": ...}``."""
    stats = {name: MethodStats(name) for name in config.methods}
    greedy = config.decode.sampling.greedy
    ideal: list[tuple[float, float]] = []
    _warm_up(runner, prompts[0], config.decode)
    for i, prompt in enumerate(prompts):
        reference = _reference(runner, prompt, config)
        runs = {}
        for name in _rotated(list(config.methods), i):  # every method, ar included, takes turns first
            runs[name] = run_method(name, runner, prompt, config.decode, reference)
            tick(name)
        ar_tokens = runs["ar"].tokens if greedy else None
        for name, gen in runs.items():
            ref = None if name == "ar" else ar_tokens
            if name == "generate":
                stats[name].add_plain(gen.tokens, gen.wall_s, len(gen.tokens), ref)
            else:
                stats[name].add(gen, ref)
        if "oracle" in config.methods:
            ideal.append(measure_step_times(runner, prompt, config.decode.shape.gamma, config.ideal_repeats))
    return _summarise(stats, ideal, config)


def measure_step_times(runner: TargetRunner, prompt: list[int], gamma: int, repeats: int) -> tuple[float, float]:
    """Best-of-``repeats`` wall time of a 1-token and a (gamma+1)-token forward after ``prompt``."""
    session = runner.new_session()
    runner.extend(session, prompt, last_only=True)
    runner.commit(session)
    one, many = float("inf"), float("inf")
    for _ in range(repeats):
        one = min(one, _timed_forward(runner, session, [prompt[-1]]))
        many = min(many, _timed_forward(runner, session, [prompt[-1]] * (gamma + 1)))
    return one, many


def _timed_forward(runner: TargetRunner, session: Any, tokens: list[int]) -> float:
    t0 = time.perf_counter()
    runner.extend(session, tokens)
    elapsed = time.perf_counter() - t0
    runner.commit(session, [])
    return elapsed


def _summarise(stats: dict[str, MethodStats], ideal: list[tuple[float, float]], config: BenchConfig) -> dict[str, Any]:
    ar = stats.get("ar")
    methods = {name: s.to_json(ar) for name, s in stats.items()}
    if ideal and "oracle" in methods:
        gamma = config.decode.shape.gamma
        one, many = sum(t for t, _ in ideal) / len(ideal), sum(t for _, t in ideal) / len(ideal)
        ideal_speedup = (gamma + 1) * one / many
        oracle = methods["oracle"]
        oracle["ideal_speedup"] = ideal_speedup
        oracle["one_token_ms"], oracle["verify_ms_gamma_plus_1"] = 1000 * one, 1000 * many
        oracle["fraction_of_ideal"] = oracle["speedup"] / ideal_speedup if oracle["speedup"] else None
    return {"methods": methods}


def _reference(runner: TargetRunner, prompt: list[int], config: BenchConfig) -> list[int] | None:
    """The target's greedy output (untimed), for drafters that replay it (the oracle)."""
    if not any(drafter_spec(m).needs_reference for m in config.methods if m not in PLAIN_METHODS):
        return None
    greedy = replace(config.decode, sampling=replace(config.decode.sampling, temperature=0.0))
    return generate_autoregressive(runner, prompt, greedy).tokens


def _rotated(methods: list[str], i: int) -> list[str]:
    """Methods in an order that rotates with the prompt index (no method always runs first)."""
    if not methods:
        return []
    k = i % len(methods)
    return methods[k:] + methods[:k]


def _warm_up(runner: TargetRunner, prompt: list[int], decode: DecodeConfig) -> None:
    """One short untimed generation: first-call allocations must not count against a method."""
    with torch.inference_mode():
        generate_autoregressive(runner, prompt, replace(decode, max_new_tokens=4))
