"""Session 26: pool measure.sh's two halves of each shape (tree 6,10,60 over prompts 0-39, chain 4 over 0-29) and
compare per prompt: pooled tau (tokens / rounds), the paired bootstrap of the per-prompt tau difference, and the
pooled MoA / EAGLE ratio with a bootstrap over prompts.

    cd drafts/bench/results/2026-12-05-s26/final-hidden && python3 pooled.py > pooled.txt
"""

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "2026-12-02-s10"))
from paired import bootstrap  # noqa: E402  (session 10's paired bootstrap, from its folder)

SHAPES = {"tree 6,10,60": ("tree-0-16", "tree-16-40"), "chain 4": ("chain-0-15", "chain-15-30")}
PAIRS = [("moa", "moa-base26"), ("moa", "moa-final26"), ("moa-base26", "moa-final26"), ("eagle", "moa")]
RATIOS = [("moa", "eagle"), ("moa-base26", "eagle"), ("moa-final26", "eagle")]


def _rows(files: tuple[str, ...]) -> dict[str, list[dict]]:
    results = [json.loads((HERE / f"{f}.json").read_text()) for f in files]
    return {m: [p for r in results for p in r["methods"][m]["per_prompt"]] for m in results[0]["methods"]}


def _pooled(rows: list[dict]) -> float:
    return sum(p["round_tokens"] for p in rows) / sum(p["rounds"] for p in rows)


def _ratio_interval(a: list[dict], b: list[dict], draws: int = 10000) -> tuple[float, float]:
    rng = random.Random(0)
    idx = range(len(a))
    ratios = []
    for _ in range(draws):
        pick = rng.choices(idx, k=len(a))
        ratios.append(_pooled([a[i] for i in pick]) / _pooled([b[i] for i in pick]))
    ratios.sort()
    return ratios[int(0.025 * draws)], ratios[int(0.975 * draws)]


def main() -> None:
    for shape, files in SHAPES.items():
        rows = _rows(files)
        n = len(rows["moa"])
        print(f"{shape}, {n} prompts: " + ", ".join(f"{m} {_pooled(r):.3f}" for m, r in rows.items() if m != "ar"))
        for old, new in PAIRS:
            a = [p["round_tokens"] / p["rounds"] for p in rows[old]]
            b = [p["round_tokens"] / p["rounds"] for p in rows[new]]
            diffs = [y - x for x, y in zip(a, b, strict=True)]
            lo, hi = bootstrap(diffs)
            better = sum(d > 0 for d in diffs)
            print(f"  {new} - {old}: per prompt {sum(diffs) / n:+.3f} [{lo:+.3f}, {hi:+.3f}], better on {better}/{n}")
        for num, den in RATIOS:
            lo, hi = _ratio_interval(rows[num], rows[den])
            print(f"  {num} / {den}: {_pooled(rows[num]) / _pooled(rows[den]):.3f}x [{lo:.3f}, {hi:.3f}]")


if __name__ == "__main__":
    main()
