"""The human-readable table moa-bench prints, and the JSON file its runs write."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

COLUMNS = (
    ("method", "{}"),
    ("tau", "{:.2f}"),
    ("accept", "{:.2f}"),
    ("tok/s", "{:.1f}"),
    ("speedup", "{:.2f}x"),
    ("fwd", "{}"),
    ("new", "{}"),
    ("draft ms", "{:.1f}"),
    ("verify ms", "{:.1f}"),
    ("=ar", "{}"),
)
KEYS = (
    None,
    "tau",
    "accept_rate",
    "tokens_per_s",
    "speedup",
    "target_forwards",
    "new_tokens",
    "draft_ms_per_round",
    "verify_ms_per_round",
    "identical_to_ar",
)


def format_table(result: dict[str, Any]) -> str:
    """A fixed-width table of the methods, then the oracle's ideal-speedup line if present."""
    rows = [[name for name, _ in COLUMNS]]
    for method, values in result["methods"].items():
        rows.append(
            [
                _cell(method if key is None else values.get(key), fmt)
                for key, (_, fmt) in zip(KEYS, COLUMNS, strict=True)
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    oracle = result["methods"].get("oracle", {})
    if "ideal_speedup" in oracle:
        lines.append(
            f"oracle: ideal speedup {oracle['ideal_speedup']:.2f}x (one token {oracle['one_token_ms']:.1f} ms, "
            f"gamma+1 tokens {oracle['verify_ms_gamma_plus_1']:.1f} ms); reached "
            f"{100 * (oracle['fraction_of_ideal'] or 0):.0f} % of it"
        )
    return "\n".join(lines)


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    return fmt.format(value)


def write_json(path: Path, result: dict[str, Any]) -> None:
    """A run's result as indented JSON at ``path`` (its folder made as needed), said on stderr."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}", file=sys.stderr)
