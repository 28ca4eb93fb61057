"""Session 14: the tree 6,10,60 figures of the standard 16 prompts (bench.sh) and the next 24 (confirm/) as one
set of 40 sharegpt-heldout prompts: pooled tau (tokens / target forwards) and the paired per-prompt bootstrap.

    python3 drafts/bench/results/2026-12-03-s14/ship/pooled_40.py [RUN FOLDER]

Session 15: `pooled_40.py s15 drafts/bench/results/2026-12-03-s15` (that folder's bench.sh tree file and its
confirm/ file, the shipped drafts against runs/s15-*).
"""

import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _files(run: str, folder: Path) -> list[Path]:
    return [
        folder / f"shipped-vs-{run}-sharegpt-t0-tree6-10-60-16x96.json",
        folder / "confirm" / f"shipped-vs-{run}-tree6-10-60-skip16-24x96.json",
    ]


def _pairs(run: str) -> list[tuple[str, str]]:
    return [("moa", f"moa-{run}"), ("eagle", f"eagle-{run}"), ("eagle", "moa"), (f"eagle-{run}", f"moa-{run}")]


def _paired() -> object:
    spec = importlib.util.spec_from_file_location("paired", HERE.parents[1] / "2026-12-02-s10" / "paired.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def main() -> None:
    run, folder = (sys.argv[1], Path(sys.argv[2])) if len(sys.argv) > 2 else ("s14", HERE.parent)
    paired = _paired()
    results = [json.loads(f.read_text()) for f in _files(run, folder)]
    rows = {m: [p for r in results for p in r["methods"][m]["per_prompt"]] for m in results[0]["methods"]}
    for old, new in _pairs(run):
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
