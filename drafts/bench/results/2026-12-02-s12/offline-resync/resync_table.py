"""The README's table from an offline-horizon JSON: kept@h, kept with re-sync@h, the paired gain at the longest.

python3 drafts/bench/results/2026-12-02-s12/offline-resync/resync_table.py FILE.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any


def paired(gains: list[int]) -> tuple[float, float]:
    """Mean and standard error of per-sample gains."""
    n = len(gains)
    mean = sum(gains) / n
    var = sum((g - mean) ** 2 for g in gains) / (n - 1) if n > 1 else 0.0
    return mean, math.sqrt(var / n)


def table(result: dict[str, Any]) -> str:
    horizons = [str(h) for h in result["config"]["horizons"]]
    longest = horizons[-1]
    head = ["method", "n", *(f"kept@{h}" for h in horizons), *(f"re-sync@{h}" for h in horizons)]
    head += [f"gain@{longest} ± sem", "samples gaining"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in result["methods"].items():
        off, re = m["offline"], m["offline_resync"]
        gains = [row["kept_resync"][name] - min(row["kept"][name], int(longest)) for row in result["samples"]]
        mean, sem = paired(gains)
        cells = [name, str(off["samples"])]
        cells += [f"{off['kept'][h]:.2f} ({100 * off['fraction'][h]:.1f} %)" for h in horizons]
        cells += [f"{re['kept'][h]:.2f} ({100 * re['fraction'][h]:.1f} %)" for h in horizons]
        cells += [f"+{mean:.2f} ± {sem:.2f}", str(sum(g > 0 for g in gains))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    for path in argv:
        print(f"{Path(path).name}:\n{table(json.loads(Path(path).read_text()))}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
