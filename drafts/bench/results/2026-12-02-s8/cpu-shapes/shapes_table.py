"""The cpu-shapes runs as one markdown table: tau, CPU-time and wall speedup over ``ar``, identical to ``ar``,
and each shape's CPU time against chain 2's, prompt by prompt (prompts where it is cheaper / all).

    cd drafts/bench/results/2026-12-02-s8/cpu-shapes && python shapes_table.py *.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BASELINE = "moa-int8-chain2"


def rows(run: str, methods: dict[str, Any]) -> list[str]:
    """One table row per method of one run."""
    base = methods[BASELINE]
    out = []
    for name, m in methods.items():
        same = {None: "-", True: "yes", False: "NO"}[m["identical_to_ar"]]
        wins = "-" if name in ("ar", BASELINE) else f"{cheaper_prompts(m, base)}/{len(m['cpu_s_per_prompt'])}"
        vs_chain2 = m["cpu_speedup"] / base["cpu_speedup"]
        out.append(
            f"| {run} | {name.removeprefix('moa-int8-')} | {m['tau']:.2f} | {m['cpu_speedup']:.3f}x | "
            f"{m['speedup']:.3f}x | {vs_chain2:.3f} | {wins} | {_ms(m.get('draft_ms_per_round'))} | "
            f"{_ms(m.get('verify_ms_per_round'))} | {same} |"
        )
    return out


def cheaper_prompts(method: dict[str, Any], base: dict[str, Any]) -> int:
    """Prompts on which ``method`` took fewer CPU seconds than chain 2 (same prompt, same answer length at T=0)."""
    return sum(a < b for a, b in zip(method["cpu_s_per_prompt"], base["cpu_s_per_prompt"], strict=True))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def main(paths: list[str]) -> int:
    print(
        "| run | shape | tau | CPU-time speedup | wall speedup | CPU vs chain 2 | prompts cheaper than chain 2 "
        "| draft ms/round | verify ms/round | = ar |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        data = json.loads(Path(path).read_text())
        for line in rows(Path(path).stem.rsplit("-", 1)[-1], data["methods"]):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
