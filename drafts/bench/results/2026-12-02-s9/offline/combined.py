"""Kept offline tokens over several offline-horizon runs of the same methods (their samples pooled):
mean kept at each horizon with its standard error, and MoA's paired margin over each other draft.

    python drafts/bench/results/2026-12-02-s9/offline/combined.py A.json B.json ...
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def sem(values: list[float]) -> float:
    n, mean = len(values), sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def main(paths: list[str]) -> None:
    runs = [json.loads(Path(path).read_text()) for path in paths]
    names = [m for m in runs[0]["methods"] if m != "target" and all(m in r["methods"] for r in runs)]
    horizons = runs[0]["config"]["horizons"]
    samples = [row["kept"] for run in runs for row in run["samples"]]
    print(f"{len(samples)} samples from {len(runs)} runs ({sum(r['config']['prompts'] for r in runs)} prompts)")
    print("method | " + " | ".join(f"kept@{h} (share) +- sem" for h in horizons))
    for name in names:
        cells = []
        for h in horizons:
            kept = [min(s[name], h) for s in samples]
            cells.append(f"{sum(kept) / len(kept):.2f} ({100 * sum(kept) / len(kept) / h:.1f} %) +- {sem(kept):.2f}")
        print(f"{name} | " + " | ".join(cells))
    for other in (n for n in names if n != "moa"):
        h = horizons[-1]
        diff = [min(s["moa"], h) - min(s[other], h) for s in samples]
        ahead, behind = sum(d > 0 for d in diff), sum(d < 0 for d in diff)
        print(f"moa - {other} @{h}: {sum(diff) / len(diff):+.2f} +- {sem(diff):.2f} (ahead {ahead}, behind {behind})")


if __name__ == "__main__":
    main(sys.argv[1:])
