"""torch.profiler op table for one extend of 1 / 5 (chain) / 17 (tree) tokens + commit, SmolLM2 fp32.

    OMP_NUM_THREADS=1 taskset -c 0 python3 drafts/bench/results/2026-12-01-s5/verify_cost/op_table.py
Also times a 17-token extend run as a chain (no mask) against the same 17 tokens as a tree (bool
ancestor mask), to isolate what the explicit mask costs the attention.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch.profiler import ProfilerActivity, profile

from drafts.target.activations import NOTHING
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree

BASE = 200


def main() -> None:
    torch.set_num_threads(1)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    session = runner.new_session()
    runner.extend(session, [(17 * i) % 40000 + 100 for i in range(BASE)], NOTHING, last_only=True)
    runner.commit(session, None, NOTHING)
    tree = DraftTree(tuple(1000 + i for i in range(16)), tuple(i // 2 for i in range(16)))
    chain16 = DraftTree.chain([1000 + i for i in range(16)])
    shapes: dict[str, tuple[DraftTree | None, list[int], list[int]]] = {
        "1": (None, [200], [0]),
        "5-chain": (DraftTree.chain([1, 2, 3, 4]), [], [0, 1, 2]),
        "17-tree": (tree, [], [0, 1, 3, 7, 15]),
        "17-chain": (chain16, [], [0, 1, 2]),
    }

    def once(name: str) -> None:
        t, toks, keep = shapes[name]
        session.truncate(BASE)
        runner.extend(session, toks if t is None else t.input_ids(200), NOTHING, tree=t)
        runner.commit(session, keep, NOTHING)

    for name in shapes:
        once(name)
    cpu: dict[str, list[float]] = {n: [] for n in shapes}
    for _ in range(15):
        for name in shapes:
            c = time.process_time()
            once(name)
            cpu[name].append((time.process_time() - c) * 1e3)
    for name, v in cpu.items():
        print(f"{name:9} extend+commit CPU median {statistics.median(v):6.1f} ms")
    for name in ("1", "5-chain", "17-tree"):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(5):
                once(name)
        print(f"\n== {name} (5 calls) ==")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
