"""Session 12: CPU shapes with the session-11 MoA, fp32 and int8 drafts, interleaved with ``ar`` (issue 12, item 6).

Session 8's ``cpu-shapes/cpu_shapes.py`` with several drafts in one run: a method is ``DRAFT:SHAPE``, a draft
named by ``--draft NAME=DIR`` (or a built-in kind such as ``moa``, the shipped fp32 checkpoint), a shape a chain
length (``2``) or an EAGLE-2 tree ``DEPTH,TOPK,TOTAL`` (``3,4,8``). On every prompt ``ar`` and each method take
turns (the order rotates per prompt) against one packed target, so the ratios survive a shared core. Each
method's CPU seconds (``time.process_time`` of this one-thread process) are kept in all (``cpu_speedup``) and
per prompt (``cpu_s_per_prompt``); moa-bench's own check marks each method identical to ``ar`` or not (``=ar``).

``--before ar moa-int8:3,4,8`` adds those methods again as ``ar@before``, ... with the target's packed Linear layers
running as before session 12 (``round_parts.converting_forward``: the same numbers, bit for bit, more slowly), in
the same rotation.

    taskset -c 0 env HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python \
        drafts/bench/results/2026-12-02-s12/cpu-speed/cpu_speed.py --draft moa-int8=runs/s12-cpu/moa-int8 \
        --methods moa-int8:3,4,8 moa:3,4,8 moa-int8:2 --before ar --json OUT.json
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import torch
from round_parts import LINEAR  # this folder's (run as a script, the folder is on sys.path)

from drafts.bench.benchmark import _rotated, _warm_up
from drafts.bench.cli import fitting_prompts
from drafts.bench.environment import run_environment
from drafts.bench.methods import run_method
from drafts.bench.report import format_table, write_json
from drafts.bench.stats import MethodStats
from drafts.data.prompts import load_prompts
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.drafters.registry import set_checkpoint
from drafts.sampling import SamplingConfig
from drafts.target.loading import load_target
from drafts.target.packed_linear import PackedLinear
from drafts.target.runner import TargetRunner


def parse_method(text: str) -> tuple[str, tuple[str, DraftShape]]:
    """``"moa-int8:3,4,8"`` -> (``moa-int8-tree3,4,8``, (``moa-int8``, tree 3,4,8)); ``"moa:2"`` -> chain 2."""
    draft, _, shape = text.partition(":")
    if not draft or not shape:
        raise SystemExit(f"a method is DRAFT:SHAPE (moa-int8:3,4,8 or moa:2), got {text!r}")
    if "," in shape:
        return f"{draft}-tree{shape}", (draft, DraftShape.parse_tree(shape))
    return f"{draft}-chain{shape}", (draft, DraftShape(gamma=int(shape)))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--draft", action="append", default=[], help="NAME=DIR: a draft checkpoint under a name")
    p.add_argument("--methods", nargs="+", required=True, help="DRAFT:SHAPE, a chain G or a tree D,K,T")
    p.add_argument("--before", nargs="*", default=[], help="ar or DRAFT:SHAPE: also run with the earlier Linear")
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--dataset", default="sharegpt-heldout")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    for item in args.draft:
        name, _, path = item.partition("=")
        set_checkpoint(name, Path(path))
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32, linear="packed"))
    prompts, skipped = fitting_prompts(runner, load_prompts(args.dataset), args.limit, args.max_new_tokens)
    sampling = SamplingConfig(0.0, 0, 1.0, seed=0)
    methods = {"ar": ("ar", DraftShape(gamma=4))} | dict(parse_method(m) for m in args.methods)
    before = {f"{name}@before": methods[name] for name in (m if m == "ar" else parse_method(m)[0] for m in args.before)}
    methods |= before
    stats = {name: MethodStats(name) for name in methods}
    cpu_s: dict[str, list[float]] = {name: [] for name in methods}
    _warm_up(runner, prompts[0], DecodeConfig(args.max_new_tokens, sampling, methods["ar"][1]))
    config = {
        "script": "drafts/bench/results/2026-12-02-s12/cpu-speed/cpu_speed.py",
        "drafts": args.draft,
        "linear": "packed",
        "dataset": args.dataset,
        "prompts": len(prompts),
        "skipped_prompts": skipped,
        "max_new_tokens": args.max_new_tokens,
        "temperature": 0.0,
        "methods": {name: [d, dataclasses.asdict(s)] for name, (d, s) in methods.items() if name != "ar"},
        **run_environment(runner),
    }
    for i, prompt in enumerate(prompts):
        runs = {}
        for name in _rotated(list(methods), i):
            draft, shape = methods[name]
            PackedLinear.forward = LINEAR["before" if name in before else "after"]  # type: ignore[method-assign]
            cpu = time.process_time()
            runs[name] = run_method(draft, runner, prompt, DecodeConfig(args.max_new_tokens, sampling, shape), None)
            cpu_s[name].append(time.process_time() - cpu)
            print(f"prompt {i} {name}: {len(runs[name].tokens)} tokens {runs[name].wall_s:.1f} s", file=sys.stderr)
        for name, gen in runs.items():
            stats[name].add(gen, None if name == "ar" else runs["ar"].tokens)
        result = results(stats, cpu_s)  # written after every prompt: a run cut short keeps what it measured
        write_json(args.json, {"config": config | {"prompts_done": i + 1}, "methods": result["methods"]})
    print(format_table(result))
    print("CPU-time speedup: " + ", ".join(f"{n} {v['cpu_speedup']:.3f}x" for n, v in result["methods"].items()))
    return 0


def results(stats: dict[str, MethodStats], cpu_s: dict[str, list[float]]) -> dict[str, Any]:
    """moa-bench's figures per method, with CPU seconds (in all and per prompt) and the CPU-time speedup."""
    result = {"methods": {name: s.to_json(stats["ar"]) for name, s in stats.items()}}
    ar_cpu_per_token = sum(cpu_s["ar"]) / stats["ar"].new_tokens
    for name, values in result["methods"].items():
        values["cpu_s"] = sum(cpu_s[name])
        values["cpu_s_per_prompt"] = cpu_s[name]
        values["cpu_speedup"] = ar_cpu_per_token / (sum(cpu_s[name]) / stats[name].new_tokens)
    return result


if __name__ == "__main__":
    sys.exit(main())
