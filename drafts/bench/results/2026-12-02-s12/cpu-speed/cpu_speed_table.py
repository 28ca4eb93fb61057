"""The README table of ``cpu_speed.py`` runs: per method tau, CPU-time speedup over ``ar`` in each run, identical to
``ar`` or not, and on how many prompts it cost less CPU than the reference method (default: tree 3,4,8, int8).

    python drafts/bench/results/2026-12-02-s12/cpu-speed/cpu_speed_table.py RUN1.json RUN2.json ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REFERENCE = "moa-int8-tree3,4,8"


def cheaper(run: dict[str, Any], name: str, reference: str) -> str:
    """Prompts on which ``name`` spent less CPU time than ``reference`` (the same prompts, same tokens)."""
    methods = run["methods"]
    if name == reference or name not in methods or reference not in methods:
        return "-"
    ours, theirs = methods[name]["cpu_s_per_prompt"], methods[reference]["cpu_s_per_prompt"]
    return f"{sum(a < b for a, b in zip(ours, theirs, strict=True))}/{len(ours)}"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("runs", type=Path, nargs="+")
    p.add_argument("--reference", default=REFERENCE)
    args = p.parse_args()
    runs = [json.loads(path.read_text()) for path in args.runs]
    names = list(dict.fromkeys(name for run in runs for name in run["methods"]))
    labels = [path.stem for path in args.runs]
    print("| method | tau | " + " | ".join(f"CPU speedup ({label})" for label in labels) + " | = ar | ", end="")
    print(" | ".join(f"cheaper than {args.reference} ({label})" for label in labels) + " |")
    print("|---" * (3 + 2 * len(runs)) + "|")
    for name in names:
        rows = [run["methods"].get(name) for run in runs]
        tau = next(r["tau"] for r in rows if r is not None)
        speedups = [f"{r['cpu_speedup']:.3f}" if r else "-" for r in rows]
        same = "-" if name == "ar" else "yes" if all(r["identical_to_ar"] for r in rows if r) else "NO"
        wins = [cheaper(run, name, args.reference) for run in runs]
        print(f"| {name} | {tau:.2f} | " + " | ".join(speedups) + f" | {same} | " + " | ".join(wins) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
