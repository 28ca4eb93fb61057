"""Session 7: the resident memory of SmolLM2-135M loaded dense, packed (the new default: the packed copy
replaces the dense weights but the LM head's, tied to the embeddings), and packed keeping every dense
weight (session 6's --packed-linear). Each in a fresh process; prints one JSON object.

    taskset -c 0 env OMP_NUM_THREADS=1 python drafts/bench/results/2026-12-02-s7/packed-default/memory.py
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys

MODES = ("dense", "packed", "packed-keep-dense")


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def measure(mode: str) -> dict[str, float | str]:
    import torch

    from drafts.target import packed_linear
    from drafts.target.loading import load_target
    from drafts.target.runner import TargetRunner

    torch.set_num_threads(1)
    if mode == "packed-keep-dense":  # session 6: every PackedLinear kept its dense weight too
        original = packed_linear.PackedLinear.__init__
        packed_linear.PackedLinear.__init__ = lambda self, linear, keep_dense=True: original(self, linear, True)  # type: ignore[method-assign]
    before = rss_mb()
    linear = "dense" if mode == "dense" else "packed"
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32, linear))
    session = runner.new_session()
    runner.extend(session, list(range(100, 400)))  # a 300-token prefill: the working buffers are there too
    gc.collect()
    return {"rss_mb": rss_mb(), "rss_before_load_mb": before, "linear": runner.linear}


def main() -> int:
    if len(sys.argv) == 2:
        print(json.dumps(measure(sys.argv[1])))
        return 0
    results = {}
    for mode in MODES:
        done = subprocess.run([sys.executable, __file__, mode], capture_output=True, text=True, check=True)
        results[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    dense = results["dense"]["rss_mb"]
    for mode in MODES:
        results[mode]["extra_over_dense_mb"] = results[mode]["rss_mb"] - dense
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
