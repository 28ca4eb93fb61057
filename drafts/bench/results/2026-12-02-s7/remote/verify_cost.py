"""What a verify of N positions costs against a one-token step, on the verifier's CPU setting.

    taskset -c 0 env OMP_NUM_THREADS=1 python3 drafts/bench/results/2026-12-02-s7/remote/verify_cost.py --json X.json

SmolLM2 fp32 loaded as moa-server loads it (``linear=auto``: packed on a CPU), one thread, a
200-token context; N = 1 (a step), 5 (chain 4), 17 (tree 4,4,16), 61 (tree 6,10,60), run as
chains (a tree adds only its mask), interleaved, each case cut back after it; medians of wall ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner

SIZES = (1, 5, 17, 61)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--context", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32, linear="auto"))
    session = runner.new_session()
    context = torch.randint(100, 40000, (args.context,), generator=torch.Generator().manual_seed(0)).tolist()
    runner.extend(session, context)
    runner.commit(session)
    tokens = torch.randint(100, 40000, (max(SIZES),), generator=torch.Generator().manual_seed(1)).tolist()
    times: dict[int, list[float]] = {n: [] for n in SIZES}
    for _ in range(args.reps):
        for n in SIZES:
            started = time.perf_counter()
            runner.extend(session, tokens[:n])
            runner.commit(session, keep=[0])
            times[n].append(1e3 * (time.perf_counter() - started))
            session.truncate(args.context)
    ms = {n: statistics.median(t) for n, t in times.items()}
    result = {
        "linear": runner.linear,
        "context": args.context,
        "median_ms": ms,
        "x_step": {n: ms[n] / ms[1] for n in ms},
    }
    for n in SIZES:
        print(f"{n:>3} positions: {ms[n]:7.1f} ms  {ms[n] / ms[1]:5.2f}x a one-token step")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
