"""The round-trip table of this directory's ``moa-bench --remote`` JSON files (Markdown).

python3 drafts/bench/results/2026-12-02-s7/remote/table.py drafts/bench/results/2026-12-02-s7/remote/*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(path: Path) -> list[str]:
    result = json.loads(path.read_text())
    if "links" not in result:
        return []
    cfg = result["config"]
    shape = f"tree {cfg['tree']}" if cfg.get("tree") else f"chain {cfg['chain']}" if cfg.get("chain") else "paced chain"
    if path.parent.name == "before":
        shape += " (before)"
    out = []
    for link, methods in result["links"].items():
        api = methods.get("api", {}).get("tokens_per_s")
        for method, r in methods.items():
            if method == "api":
                continue
            tau = r.get("tau") or tau_before(r, cfg["prompts"])
            ratio = f"{r['tokens_per_s'] / api:.2f}" if api else "-"
            out.append(
                f"| {cfg['dataset']} | {shape} | {link} | {r['round_trips_per_100']:.1f} | "
                f"{tau:.2f} | {100 / tau:.1f} | {r.get('requests_per_100', r['round_trips_per_100']):.1f} | "
                f"{r['tokens_per_s']:.2f} | {api:.2f} | {ratio} | {r['identical_to_ar']} |"
            )
    return out


def tau_before(r: dict, prompts: int) -> float:
    """A file written before ``tau`` was reported: new tokens per verify round (forwards less one prefill each)."""
    return float(r["new_tokens"]) / (r["target_forwards_per_100"] * r["new_tokens"] / 100 - prompts)


HEAD = (
    "| dataset | shape | link | round trips / 100 | tau | 100 / tau | requests / 100 "
    "| MoA tok/s | API tok/s | MoA / API | = ar |"
)


def main(paths: list[str]) -> None:
    print(HEAD)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        for row in rows(Path(path)):
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
