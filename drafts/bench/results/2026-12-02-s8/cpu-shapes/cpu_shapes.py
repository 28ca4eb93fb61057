"""Session 8: small trees against chains 2 and 3 on a CPU (packed target, the app's int8 MoA draft), interleaved.

moa-bench runs one shape per run; this script runs moa-bench's own pieces (run_method, MethodStats,
the JSON writer) over several shapes at once, as session 7's ``packed-default/chain_shapes.py`` did for
chains: on every prompt ``ar`` and each shape take turns (the order rotates per prompt), all against the
same packed target, so the ratios survive a core shared with other jobs. Besides moa-bench's wall-clock
figures it records each method's CPU seconds (``time.process_time`` of this one-thread process: time
spent waiting for the core is not counted), in all (``cpu_speedup``) and per prompt (``cpu_s_per_prompt``,
for paired comparisons between shapes).

A shape is a chain length (``2``) or an EAGLE-2 tree ``DEPTH,TOPK,TOTAL`` (``3,2,4``):

    taskset -c 0 env OMP_NUM_THREADS=1 python drafts/bench/results/2026-12-02-s8/cpu-shapes/cpu_shapes.py \
        --checkpoint runs/s8-cpu/moa-int8 --shapes 2 3 2,2,3 3,2,4 --json OUT.json
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

import torch

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
from drafts.target.packed_linear import pack_linear_layers
from drafts.target.runner import TargetRunner

DRAFT = "moa-int8"


def parse_shape(text: str) -> tuple[str, DraftShape]:
    """``"2"`` -> chain 2, ``"3,2,4"`` -> tree 3,2,4; with the method's name in the results."""
    if "," in text:
        return f"{DRAFT}-tree{text}", DraftShape.parse_tree(text)
    return f"{DRAFT}-chain{text}", DraftShape(gamma=int(text))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", type=Path, required=True, help="the MoA draft (derived with --int8)")
    p.add_argument("--shapes", nargs="+", default=["2", "3", "2,2,3", "3,2,4"], help="chains G and trees D,K,T")
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--dataset", default="sharegpt-heldout")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    set_checkpoint(DRAFT, args.checkpoint)
    loaded = load_target(None, torch.device("cpu"), torch.float32)
    pack_linear_layers(loaded.model)
    runner = TargetRunner(loaded)
    prompts, skipped = fitting_prompts(runner, load_prompts(args.dataset), args.limit, args.max_new_tokens)
    sampling = SamplingConfig(0.0, 0, 1.0, seed=0)
    shapes = {"ar": DraftShape(gamma=4)} | dict(parse_shape(s) for s in args.shapes)
    stats = {name: MethodStats(name) for name in shapes}
    cpu_s: dict[str, list[float]] = {name: [] for name in shapes}
    _warm_up(runner, prompts[0], DecodeConfig(args.max_new_tokens, sampling, shapes["ar"]))
    config = {
        "script": "drafts/bench/results/2026-12-02-s8/cpu-shapes/cpu_shapes.py",
        "checkpoint": str(args.checkpoint),
        "linear": "packed",
        "dataset": args.dataset,
        "prompts": len(prompts),
        "skipped_prompts": skipped,
        "max_new_tokens": args.max_new_tokens,
        "temperature": 0.0,
        "shapes": {name: dataclasses.asdict(shape) for name, shape in shapes.items() if name != "ar"},
        **run_environment(runner),
    }
    for i, prompt in enumerate(prompts):
        runs = {}
        for name in _rotated(list(shapes), i):
            decode = DecodeConfig(args.max_new_tokens, sampling, shapes[name])
            cpu = time.process_time()
            runs[name] = run_method("ar" if name == "ar" else DRAFT, runner, prompt, decode, None)
            cpu_s[name].append(time.process_time() - cpu)
            print(f"prompt {i} {name}: {len(runs[name].tokens)} tokens {runs[name].wall_s:.1f} s", file=sys.stderr)
        for name, gen in runs.items():
            stats[name].add(gen, None if name == "ar" else runs["ar"].tokens)
        result = results(stats, cpu_s)  # written after every prompt: a run cut short keeps what it measured
        write_json(args.json, {"config": config | {"prompts_done": i + 1}, "methods": result["methods"]})
    print(format_table(result))
    print("CPU-time speedup: " + ", ".join(f"{n} {v['cpu_speedup']:.2f}x" for n, v in result["methods"].items()))
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
