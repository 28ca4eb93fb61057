"""What one round of each shape costs against one ``ar`` step, in CPU time; with tau, a speedup less noisy than a run's.

On a core shared with other jobs a whole run's CPU seconds still move with what else runs (caches, the
other jobs' memory traffic), enough to reorder shapes whose speedups lie within ~10 % (the runs'
``cpu_speedup``). Here each piece is timed alone, many times, as this thread's CPU time
(``time.thread_time``: time spent waiting for the core is not counted), and the median taken:

    step     the target over one token and its commit (ar's whole step)
    draft    the int8 MoA draft proposing the shape (``NeuralDrafter.propose``)
    verify   the speculative loop's own ``verify``: the target over [root, nodes] with the draft's
             activations, tree acceptance, commit of the accepted path, the draft observing it

at each of the prompts' real context (the prompt, then the root), cut back after every round, shapes
interleaved. Modelled speedup = tau * step / (draft + verify), tau from the interleaved runs
(``cpu_shapes.py``): it leaves out the prefill and the loop's bookkeeping, which every method pays.

    taskset -c 0 env OMP_NUM_THREADS=1 python drafts/bench/results/2026-12-02-s8/cpu-shapes/round_cost.py \
        --checkpoint runs/s8-cpu/moa-int8 --runs RUN1.json RUN2.json --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from drafts.bench.cli import fitting_prompts
from drafts.bench.environment import run_environment
from drafts.bench.report import write_json
from drafts.data.prompts import load_prompts
from drafts.decoding.config import DecodeConfig
from drafts.decoding.speculative import verify
from drafts.drafters.base import DraftShape
from drafts.neural.checkpoint import load_draft
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from drafts.target.loading import load_target
from drafts.target.packed_linear import pack_linear_layers
from drafts.target.runner import TargetRunner, TargetSession


def shapes_of(run: dict[str, Any]) -> dict[str, DraftShape]:
    """The drafted shapes of an interleaved run, by method name."""
    return {name: DraftShape(**fields) for name, fields in run["config"]["shapes"].items()}


def prefilled(runner: TargetRunner, drafter: NeuralDrafter, prompt: list[int]) -> TargetSession:
    """A session holding ``prompt`` but its last token (the root), the draft having observed the same."""
    session = runner.new_session()
    drafter.begin(prompt)
    runner.extend(session, prompt[:-1], drafter.needs)
    drafter.observe(prompt[:-1], runner.commit(session, None, drafter.needs), prompt[-1])
    return session


def cpu_ms(work: Any) -> float:
    started = time.thread_time()
    work()
    return 1e3 * (time.thread_time() - started)


def time_round(
    runner: TargetRunner, drafter: NeuralDrafter, session: TargetSession, prompt: list[int], shape: DraftShape
) -> tuple[float, float]:
    """(draft ms, verify ms) of one round below the root ``prompt[-1]``; the session and the draft cut back after."""
    held = session.length
    decode = DecodeConfig(1, SamplingConfig(), shape)
    trees = []
    draft = cpu_ms(lambda: trees.append(drafter.propose(prompt, shape, decode.sampling, None)))
    generator = torch.Generator().manual_seed(0)
    checked = cpu_ms(lambda: verify(runner, drafter, session, prompt[-1], trees[0], decode, generator))
    session.truncate(held)
    drafter.truncate(held)
    return draft, checked


def time_step(runner: TargetRunner, session: TargetSession, root: int) -> float:
    """ms of ar's step: the target over the root, committed; cut back after."""
    held = session.length

    def step() -> None:
        runner.extend(session, [root])
        runner.commit(session)

    spent = cpu_ms(step)
    session.truncate(held)
    return spent


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", type=Path, required=True, help="the MoA draft (derived with --int8)")
    p.add_argument("--runs", type=Path, nargs="+", required=True, help="cpu_shapes.py results (shapes, tau)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--costs", type=Path, default=None, help="an earlier result: its timings with these runs' tau")
    args = p.parse_args()
    runs = [json.loads(path.read_text()) for path in args.runs]
    if args.costs is not None:
        return remodel(json.loads(args.costs.read_text()), runs, args.runs, args.json)
    torch.set_num_threads(1)
    shapes = shapes_of(runs[0])
    loaded = load_target(None, torch.device("cpu"), torch.float32)
    pack_linear_layers(loaded.model)
    runner = TargetRunner(loaded)
    drafter = NeuralDrafter(load_draft(args.checkpoint, runner))
    prompts, _ = fitting_prompts(runner, load_prompts(runs[0]["config"]["dataset"]), args.limit, 96)
    step: list[float] = []
    draft: dict[str, list[float]] = {name: [] for name in shapes}
    checked: dict[str, list[float]] = {name: [] for name in shapes}
    for i, prompt in enumerate(prompts):
        session = prefilled(runner, drafter, prompt)
        for rep in range(args.reps + 1):  # the first pass warms the caches up and is not counted
            names = list(shapes)[(i + rep) % len(shapes) :] + list(shapes)[: (i + rep) % len(shapes)]
            spent = time_step(runner, session, prompt[-1])
            rounds = {name: time_round(runner, drafter, session, prompt, shapes[name]) for name in names}
            if rep:
                step.append(spent)
                for name, (d, v) in rounds.items():
                    draft[name].append(d)
                    checked[name].append(v)
        print(f"prompt {i}: {len(prompt)} tokens", file=sys.stderr)
    config = {"checkpoint": str(args.checkpoint), "prompts": len(prompts), "reps": args.reps, "linear": "packed"}
    timings = {"step_ms": step, "draft_ms": draft, "verify_ms": checked}
    write_json(
        args.json, {"config": config | run_environment(runner), "timings": timings} | summary(timings, runs, args.runs)
    )
    return 0


def remodel(earlier: dict[str, Any], runs: list[dict[str, Any]], paths: list[Path], out: Path) -> int:
    """An earlier result's timings, modelled with ``runs``' tau."""
    write_json(
        out, {"config": earlier["config"], "timings": earlier["timings"]} | summary(earlier["timings"], runs, paths)
    )
    return 0


def summary(timings: dict[str, Any], runs: list[dict[str, Any]], paths: list[Path]) -> dict[str, Any]:
    """Per shape: median draft and verify ms, a round in ar steps, tau and the modelled speedup per run."""
    step = statistics.median(timings["step_ms"])
    out: dict[str, Any] = {}
    for name in timings["draft_ms"]:
        d, v = statistics.median(timings["draft_ms"][name]), statistics.median(timings["verify_ms"][name])
        row: dict[str, Any] = {"draft_ms": d, "verify_ms": v, "round_x_step": (d + v) / step}
        for path, run in zip(paths, runs, strict=True):
            if name not in run["methods"]:  # a run of fewer shapes
                continue
            tau = run["methods"][name]["tau"]
            row[path.stem.rsplit("-", 1)[-1]] = {"tau": tau, "modelled_speedup": tau * step / (d + v)}
        out[name] = row
        print(
            f"{name:>20}: draft {d:5.1f} ms, verify {v:6.1f} ms, {(d + v) / step:.2f} steps; "
            + ", ".join(f"{k} {r['modelled_speedup']:.3f}x" for k, r in row.items() if isinstance(r, dict))
        )
    return {"step_ms": step, "shapes": out}


if __name__ == "__main__":
    sys.exit(main())
