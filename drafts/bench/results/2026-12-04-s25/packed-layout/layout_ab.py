"""Session 25: the target's packed Linear layers with the weight laid out for 64 rows against the plain
``to_mkldnn()`` copy of sessions 7-24, interleaved in one process (issue 12, item 6: a cheaper exact verify).

Two SmolLM2-135M targets loaded packed (one put back to the plain layout), each after the same 300-token
prefill; each rep times, in thread CPU time, one forward of 1 token, a 5-token chain, the 9-node tree 3,4,8 and
a 17-node tree (the cache cut back after each), and a 300-token prefill from scratch, the layouts taking turns.
Medians in ms, and whether the two layouts' argmax agree at every position.

    taskset -c 1 env HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python3 \
        drafts/bench/results/2026-12-04-s25/packed-layout/layout_ab.py --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from drafts.target.loading import load_target
from drafts.target.packed_linear import PackedLinear
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree

CONTEXT = list(range(1000, 1300))  # (300,) token ids: a 300-token context
HEADER = (
    "| forward | plain layout ms | laid out for 64 rows ms | new / old | in 1-token steps, old -> new | argmax agree |"
)
KEYS = ("rows64", "plain")  # the weights laid out for 64 rows (session 25), the plain copy (sessions 7-24)
TREES = {
    "1": None,
    "chain 4 (5)": DraftTree.chain(list(range(3000, 3004))),
    "tree 3,4,8 (9)": DraftTree(tuple(range(3000, 3008)), (0, 0, 0, 1, 1, 2, 4, 4)),
    "tree 4,4,16 (17)": DraftTree(tuple(range(3000, 3016)), (0, 0, 0, 0, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10)),
}


def plain_layout(runner: TargetRunner) -> TargetRunner:
    """Put every packed weight back to sessions 7-24's plain oneDNN copy."""
    for module in runner.model.modules():
        if isinstance(module, PackedLinear):
            dense = module.packed_weight.to_dense()
            module.packed_weight = dense.to_mkldnn()
    return runner


def forward(runner: TargetRunner, session: TargetSession, name: str) -> torch.Tensor:
    tree, length = TREES[name], session.length
    tokens = [2000] + (list(tree.tokens) if tree else [])
    logits = runner.extend(session, tokens, tree=tree)  # (n, V)
    session.pending, session.pending_hidden = 0, {}
    session.truncate(length)
    return logits


def prefill(runner: TargetRunner) -> torch.Tensor:
    session = runner.new_session()
    return runner.extend(session, CONTEXT, last_only=True)


def prefilled(runner: TargetRunner) -> TargetSession:
    session = runner.new_session()
    runner.extend(session, CONTEXT)
    runner.commit(session)
    return session


def interleaved(
    runners: dict[str, TargetRunner], parts: list[str], reps: int, same: Callable[[dict[str, torch.Tensor]], bool]
) -> tuple[dict[str, dict[str, list[float]]], dict[str, bool]]:
    """Each part (a TREES key or "prefill 300") run by every runner in turn, the order alternating per rep,
    after two warm-up reps: thread CPU ms per part and runner, and whether ``same`` held for the outputs
    of every rep."""
    sessions = {key: prefilled(runner) for key, runner in runners.items()}
    ms: dict[str, dict[str, list[float]]] = {part: {key: [] for key in runners} for part in parts}
    held = dict.fromkeys(parts, True)
    for rep in range(reps + 2):
        for part in parts:
            outs = {}
            for key in list(runners) if rep % 2 == 0 else list(runners)[::-1]:
                start = time.process_time()
                if part == "prefill 300":
                    outs[key] = prefill(runners[key])
                else:
                    outs[key] = forward(runners[key], sessions[key], part)
                if rep >= 2:
                    ms[part][key].append((time.process_time() - start) * 1e3)
            held[part] = held[part] and same(outs)
    return ms, held


def medians(ms: dict[str, dict[str, list[float]]], held: dict[str, bool], flag: str) -> dict[str, dict[str, Any]]:
    """Per part: each runner's median ms, and ``flag``: whether the outputs' check held every rep."""
    return {
        part: {key: statistics.median(v) for key, v in row.items()} | {flag: held[part]} for part, row in ms.items()
    }


def write_json(path: Path, reps: int, table: dict[str, dict[str, Any]], ms: dict[str, dict[str, list[float]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"reps": reps, "ms_median": table, "ms": ms}, indent=1))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    layouts = {key: TargetRunner(load_target(None, torch.device("cpu"), torch.float32, "packed")) for key in KEYS}
    plain_layout(layouts["plain"])
    ms, agree = interleaved(
        layouts,
        [*TREES, "prefill 300"],
        args.reps,
        lambda o: torch.equal(o["rows64"].argmax(-1), o["plain"].argmax(-1)),
    )
    table = medians(ms, agree, "argmax_agree")
    step = table["1"]
    print(HEADER)
    print("|---|---|---|---|---|---|")
    for part, row in table.items():
        print(
            f"| {part} | {row['plain']:.1f} | {row['rows64']:.1f} | {row['rows64'] / row['plain']:.3f} "
            f"| {row['plain'] / step['plain']:.2f} -> {row['rows64'] / step['rows64']:.2f} | {row['argmax_agree']} |"
        )
    write_json(args.json, args.reps, table, ms)


if __name__ == "__main__":
    main()
