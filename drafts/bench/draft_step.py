"""``python -m drafts.bench.draft_step``: what one drafted token costs, split into its parts.

    taskset -c 0 python -m drafts.bench.draft_step --method moa,eagle,independent,moa-int8 \\
        --checkpoint moa-int8=runs/moa-int8 --json draft_step.json

For every draft (a shipped kind, or ``--checkpoint NAME=DIR``, e.g. a variant written by
:mod:`drafts.neural.derive`) it prefills the target on held-out prompts, lets the draft observe
them, then times chains drafted through the real ``NeuralDrafter.propose`` (greedy), the
drafts taking turns within every round so that ratios survive a noisy, shared core:

- ``cold``: after sweeping a buffer larger than the L3 cache through it, as the target's verify
  pass (540 MB of SmolLM2 weights) does between two rounds of real decoding; ``warm``: the same
  chain again at once. A draft whose weights fit the cache gains most when warm.
- ``head``: the share spent in the LM head rows (timed inside the chain by wrapping them);
  ``body``: the rest of the step; ``python``: the part of a step no torch operator accounts for
  (wall time minus the operators' own time under ``torch.profiler``, profiled once per draft).
- ``coverage``: the share of the target's greedy tokens (``--coverage-prompts``) the draft
  vocabulary contains; a token outside it can never be drafted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from drafts.bench.cli import fitting_prompts, register_checkpoints
from drafts.bench.environment import run_environment
from drafts.bench.report import write_json
from drafts.data.prompts import load_prompts
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.drafters.registry import drafter_spec
from drafts.errors import ConfigError, MoaError
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.vocab_prune import coverage
from drafts.sampling import SamplingConfig
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner

GREEDY = SamplingConfig(temperature=0.0)


class TimedHead(nn.Module):
    """The draft's LM head (its module or the fp32 product), adding up the time it takes."""

    def __init__(self, weight: torch.Tensor, inner: nn.Module | None) -> None:
        super().__init__()
        self.weight, self.inner = weight, inner
        self.seconds = 0.0

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        t0 = time.perf_counter()
        out = self.inner(h) if self.inner is not None else h @ self.weight.T
        self.seconds += time.perf_counter() - t0
        return out


@dataclass
class DraftTimes:
    """Per-round timings of one draft, milliseconds per drafted token."""

    name: str
    cold: list[float] = field(default_factory=list)
    warm: list[float] = field(default_factory=list)
    head_cold: list[float] = field(default_factory=list)
    head_warm: list[float] = field(default_factory=list)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m drafts.bench.draft_step", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--method", default="moa,eagle,independent", help="drafts to time; the first is the ratios' base")
    p.add_argument("--checkpoint", action="append", default=[], metavar="NAME=DIR", help="as moa-bench's")
    p.add_argument("--dataset", default="sharegpt-heldout")
    p.add_argument("--prompts", type=int, default=4, help="prompts the drafts observe (default 4)")
    p.add_argument("--rounds", type=int, default=15, help="timed chains per prompt and draft (default 15)")
    p.add_argument("--gamma", type=int, default=4, help="tokens per chain (default 4)")
    p.add_argument("--flush-mb", type=int, default=96, help="buffer swept before a cold chain (default 96 MB)")
    p.add_argument("--coverage-prompts", type=int, default=20, help="prompts of target greedy text (0: skip)")
    p.add_argument("--coverage-tokens", type=int, default=128, help="greedy tokens per coverage prompt")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", type=Path, help="write the results here")
    return p


@dataclass(frozen=True)
class StepBenchConfig:
    rounds: int = 15  # timed chains per prompt and draft
    gamma: int = 4  # tokens per chain
    flush_mb: int = 96  # buffer swept before a cold chain (larger than the L3 cache)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        register_checkpoints(args.checkpoint)
        names = [m.strip() for m in args.method.split(",") if m.strip()]
        runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
        drafters = {name: drafter_spec(name).build(runner, []) for name in names}
        tokens = greedy_tokens(runner, args) if args.coverage_prompts else []
        prompts, _ = fitting_prompts(runner, load_prompts(args.dataset), args.prompts, 2 * args.gamma)
        config = StepBenchConfig(args.rounds, args.gamma, args.flush_mb)
        result = {"config": vars(args) | {"json": str(args.json)} | run_environment(runner)}
        result["methods"] = run(runner, drafters, prompts, tokens, config)
    except MoaError as exc:
        print(f"draft_step: error: {exc}", file=sys.stderr)
        return 2
    print(format_table(result))
    if args.json:
        write_json(args.json, result)
    return 0


def run(
    runner: TargetRunner,
    drafters: dict[str, Any],
    prompts: list[list[int]],
    tokens: list[int],
    config: StepBenchConfig,
) -> dict[str, Any]:
    """Time every draft on every prompt, taking turns; ``tokens``: target text for the coverage."""
    for name, drafter in drafters.items():
        if not isinstance(drafter, NeuralDrafter):
            raise ConfigError(f"{name!r} is not a trained draft; draft_step times trained drafts only")
    times = {name: DraftTimes(name) for name in drafters}
    flush = torch.zeros(config.flush_mb * 2**18)  # float32: 4 bytes each
    shape = DraftShape(gamma=config.gamma)
    names = list(drafters)
    for i, prompt in enumerate(prompts):
        context = [*prompt, 0]
        for drafter in drafters.values():
            context[-1] = prefill(runner, drafter, prompt)  # the target's first token: the chains' root
        for r in range(config.rounds):
            k = (i + r) % len(names)
            for name in names[k:] + names[:k]:
                time_round(drafters[name], context, shape, flush, times[name])
    overhead = {name: python_share(d, context, shape) for name, d in drafters.items()}
    base = times[names[0]]
    return {name: summarise(times[name], base, overhead[name], drafters[name], tokens) for name in drafters}


def prefill(runner: TargetRunner, drafter: NeuralDrafter, prompt: list[int]) -> int:
    """The draft observes ``prompt``; returns the target's greedy next token."""
    session = runner.new_session()
    drafter.begin(prompt)
    logits = runner.extend(session, prompt, drafter.needs, last_only=True)
    root = int(logits[-1].argmax())
    drafter.observe(prompt, runner.commit(session, None, drafter.needs), root)
    return root


def time_round(
    drafter: NeuralDrafter, context: list[int], shape: DraftShape, flush: torch.Tensor, out: DraftTimes
) -> None:
    """One cold chain (after the cache sweep), then the same chain warm."""
    parts = drafter.model.parts
    timed = TimedHead(parts.head_weight, parts.head)
    parts.head = timed
    try:
        for cold in (True, False):
            if cold:
                flush.add_(1.0)
            timed.seconds = 0.0
            t0 = time.perf_counter()
            tree = drafter.propose(context, shape, GREEDY, None)
            wall = time.perf_counter() - t0
            n = max(1, tree.size)
            (out.cold if cold else out.warm).append(1000 * wall / n)
            (out.head_cold if cold else out.head_warm).append(1000 * timed.seconds / n)
    finally:
        parts.head = timed.inner


def python_share(drafter: NeuralDrafter, context: list[int], shape: DraftShape, chains: int = 10) -> dict[str, float]:
    """Warm, per drafted token, under ``torch.profiler``: wall ms, the operators' own ms, the rest
    (Python, and the profiler's own per-operator cost: an upper bound) and operator calls."""
    from torch.profiler import profile

    for _ in range(3):
        drafter.propose(context, shape, GREEDY, None)
    n = chains * max(1, shape.gamma)
    with profile() as prof:
        t0 = time.perf_counter()
        for _ in range(chains):
            drafter.propose(context, shape, GREEDY, None)
        wall = 1000 * (time.perf_counter() - t0) / n
    events = prof.key_averages()
    ops = sum(e.self_cpu_time_total for e in events) / 1000 / n
    calls = sum(e.count for e in events) / n
    return {"wall_ms": wall, "operators_ms": ops, "python_ms": max(0.0, wall - ops), "operator_calls": calls}


def greedy_tokens(runner: TargetRunner, args: argparse.Namespace) -> list[int]:
    """The target's greedy answers to the first ``--coverage-prompts`` prompts that fit (the text drafts face)."""
    config = DecodeConfig(args.coverage_tokens, GREEDY, DraftShape(gamma=1))
    prompts, _ = fitting_prompts(runner, load_prompts(args.dataset), args.coverage_prompts, args.coverage_tokens)
    tokens: list[int] = []
    for prompt in prompts:
        tokens += generate_autoregressive(runner, prompt, config).tokens
    return tokens


def summarise(
    t: DraftTimes, base: DraftTimes, overhead: dict[str, float], drafter: NeuralDrafter, tokens: list[int]
) -> dict[str, Any]:
    model = drafter.model
    row: dict[str, Any] = {
        "kind": model.kind,
        "draft_vocab": model.parts.draft_vocab,
        "int8": model.parts.head is not None,
        "coverage": coverage(model.parts.d2t, tokens) if tokens else None,
        "coverage_tokens": len(tokens),
    }
    for label in ("cold", "warm"):
        total, head = getattr(t, label), getattr(t, f"head_{label}")
        ratios = [a / b for a, b in zip(total, getattr(base, label), strict=True)]
        row[f"ms_per_token_{label}"] = statistics.median(total)
        row[f"head_ms_{label}"] = statistics.median(head)
        row[f"body_ms_{label}"] = statistics.median([a - h for a, h in zip(total, head, strict=True)])
        row[f"ratio_{label}"] = statistics.geometric_mean(ratios)
    return row | {f"profiled_{k}": v for k, v in overhead.items()}


def format_table(result: dict[str, Any]) -> str:
    head = f"{'draft':<16}{'vocab':>7}{'int8':>6}{'cover':>7}{'cold ms':>9}{'head':>7}{'body':>7}{'ratio':>7}"
    head += f"{'warm ms':>9}{'ratio':>7}{'python':>8}"
    lines = [head]
    for name, m in result["methods"].items():
        cover = "-" if m["coverage"] is None else f"{m['coverage']:.3f}"
        lines.append(
            f"{name:<16}{m['draft_vocab']:>7}{'yes' if m['int8'] else 'no':>6}{cover:>7}"
            f"{m['ms_per_token_cold']:>9.2f}{m['head_ms_cold']:>7.2f}{m['body_ms_cold']:>7.2f}{m['ratio_cold']:>7.2f}"
            f"{m['ms_per_token_warm']:>9.2f}{m['ratio_warm']:>7.2f}{m['profiled_python_ms']:>8.2f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
