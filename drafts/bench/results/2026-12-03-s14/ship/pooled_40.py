"""Session 14: the tree 6,10,60 figures of the standard 16 prompts (bench.sh) and the next 24 (confirm/) as one
set of 40 sharegpt-heldout prompts: pooled tau (tokens / target forwards) and the paired per-prompt bootstrap.

    python3 drafts/bench/results/2026-12-03-s14/ship/pooled_40.py
"""

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = [
    HERE.parent / "shipped-vs-s14-sharegpt-t0-tree6-10-60-16x96.json",
    HERE.parent / "confirm" / "shipped-vs-s14-tree6-10-60-skip16-24x96.json",
]
PAIRS = [("moa", "moa-s14"), ("eagle", "eagle-s14"), ("eagle", "moa"), ("eagle-s14", "moa-s14")]


def _paired() -> object:
    spec = importlib.util.spec_from_file_location("paired", HERE.parents[1] / "2026-12-02-s10" / "paired.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def main() -> None:
    paired = _paired()
    results = [json.loads(f.read_text()) for f in FILES]
    rows = {m: [p for r in results for p in r["methods"][m]["per_prompt"]] for m in results[0]["methods"]}
    for old, new in PAIRS:
        a = [p["round_tokens"] / p["rounds"] for p in rows[old]]
        b = [p["round_tokens"] / p["rounds"] for p in rows[new]]
        diffs = [y - x for x, y in zip(a, b, strict=True)]
        lo, hi = paired.bootstrap(diffs)  # type: ignore[attr-defined]
        pooled = {m: sum(p["round_tokens"] for p in rows[m]) / sum(p["rounds"] for p in rows[m]) for m in (old, new)}
        print(
            f"{old} {pooled[old]:.3f}, {new} {pooled[new]:.3f} (pooled, {len(diffs)} prompts): per prompt "
            f"{sum(diffs) / len(diffs):+.3f} [{lo:+.3f}, {hi:+.3f}], better on {sum(d > 0 for d in diffs)}/{len(diffs)}"
        )


if __name__ == "__main__":
    main()
