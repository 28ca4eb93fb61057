"""Print the proposals table from run.sh's ``moa-bench --remote`` JSON files.

    cd drafts/bench/results/2026-12-02-s10/proposals && python3 proposals_table.py *.json

One row per data set, shape, link and stream method: tokens/s, its ratio to API streaming in the same
file (methods interleaved per prompt), tokens per server step (tau), and the proposer's figures
(app.engine.proposal_tally): the steps by the lag of the proposal they had (tokens made after its
base: 0, 1, 2, 3, 4+), the share of steps where it applied, nodes verified and drafted tokens
accepted per step, draft ms per proposal against the step's ms, proposals dropped as stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def shape(config: dict[str, Any]) -> str:
    if config.get("tree"):
        return f"tree {config['tree']}"
    return f"chain {config['chain']}" if config.get("chain") else "paced chain"


def rows(run: dict[str, Any]) -> list[str]:
    config, out = run["config"], []
    for link, methods in run["links"].items():
        api = methods.get("api", {}).get("tokens_per_s") or 0.0
        same = all(r["identical_to_ar"] for r in methods.values())
        for name, r in methods.items():
            p = r.get("proposals")
            if p is None:
                continue
            ratio = f"{r['tokens_per_s'] / api:.2f}" if api else "-"
            lags = "/".join(str(n) for n in p["lag_counts"])
            out.append(
                f"| {config['dataset']} | {shape(config)} | {link} | {name} | {r['tokens_per_s']:.2f} | {api:.2f} | "
                f"{ratio} | {r['tau']:.2f} | {lags} | {p['applied_share']:.2f} | {p['applied_nodes_per_step']:.2f} | "
                f"{p['accepted_per_step']:.2f} | {p['draft_ms']:.0f} / {p['step_ms']:.0f} | {p['skipped']} | {same} |"
            )
    return out


def main(paths: list[str]) -> None:
    print(
        "| data set | shape | link | method | tok/s | API tok/s | / API | tau | steps by lag 0/1/2/3/4+ "
        "| applied share | nodes applied / step | accepted / step | draft / step ms | dropped | = ar |"
    )
    print("| --- " * 15 + "|")
    for path in sorted(paths):
        for row in rows(json.loads(Path(path).read_text())):
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
