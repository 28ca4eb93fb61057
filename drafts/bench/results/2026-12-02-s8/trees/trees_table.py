"""Print the tree sweep's tables from moa-bench JSON files (one run per data set and shape).

    python3 drafts/bench/results/2026-12-02-s8/trees/trees_table.py drafts/bench/results/2026-12-02-s8/trees/*.json

Table 1: tau per method, 100 / tau (verify rounds per 100 tokens), MoA / EAGLE, identical to ar.
Table 2: acceptance by depth, as moa-bench counts it (rounds keeping >= d drafted tokens, of the rounds
drafting that deep) and, in brackets, conditional on depth d-1 kept (a_d / a_(d-1)): how well a draft
still agrees with the target d tokens down, the quantity that decides whether deeper trees pay.
A method named ``moa-s7`` / ``eagle-s7`` (session 7's run of the drafts shipped now) counts as moa / eagle.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

KINDS = ("moa", "eagle")


def kind_rows(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The run's MoA and EAGLE rows, by kind (a session-7 name such as ``moa-s7`` taken for the shipped draft)."""
    methods = run["methods"]
    return {kind: methods.get(f"{kind}-s7", methods.get(kind)) for kind in KINDS}


def shape_key(shape: str) -> tuple[int, ...]:
    """``"tree 10,10,100"`` -> (10, 10, 100): shapes in numeric order."""
    return tuple(int(x) for x in shape.split()[-1].split(","))


def label(run: dict[str, Any]) -> str:
    c = run["config"]
    return f"{c['dataset']} | {c['draft_shape']} | {c['prompts']} x {c['max_new_tokens']}"


def print_tau(runs: list[dict[str, Any]]) -> None:
    print(
        "| data set | shape | prompts | MoA tau | EAGLE tau | MoA / EAGLE | 100 / tau MoA | 100 / tau EAGLE |"
        " = ar | tok/s vs ar MoA / EAGLE |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        rows = kind_rows(run)
        moa, eagle = rows["moa"], rows["eagle"]
        same = all(r["identical_to_ar"] for r in rows.values())
        print(
            f"| {label(run)} | {moa['tau']:.3f} | {eagle['tau']:.3f} | {moa['tau'] / eagle['tau']:.3f} |"
            f" {100 / moa['tau']:.1f} | {100 / eagle['tau']:.1f} | {same} |"
            f" {moa['speedup']:.2f} / {eagle['speedup']:.2f} |"
        )


def depth_cells(acceptance: dict[str, float], depth: int) -> list[str]:
    cells, previous = [], 1.0
    for d in range(1, depth + 1):
        a = acceptance.get(str(d))
        if a is None:
            cells.append("")
            continue
        cells.append(f"{a:.3f} ({a / previous:.2f})" if previous else f"{a:.3f}")
        previous = a
    return cells


def print_depths(runs: list[dict[str, Any]]) -> None:
    depth = max(len(row["per_position_acceptance"]) for r in runs for row in kind_rows(r).values())
    print("| data set | shape | prompts | draft | " + " | ".join(f"d{d}" for d in range(1, depth + 1)) + " |")
    print("|---|---|---|---|" + "---|" * depth)
    for run in runs:
        for kind, row in kind_rows(run).items():
            cells = depth_cells(row["per_position_acceptance"], depth)
            print(f"| {label(run)} | {kind} | " + " | ".join(cells) + " |")


def main(paths: list[str]) -> int:
    runs = [json.loads(Path(p).read_text()) for p in paths]
    runs.sort(key=lambda r: (r["config"]["dataset"], shape_key(r["config"]["draft_shape"])))
    print_tau(runs)
    print()
    print_depths(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
