"""Calibration of the drafts' tree scores, and selection rules replayed on recorded rounds.

    python3 tree_calibration.py rounds.json [--fit-prompts N] [--total 60]

Reads ``tree_rounds.py``'s records. (1) A reliability table per depth: among nodes whose parent is on
the target's path, the draft's q against how often the node is on the path too. (2) A per-depth power-law
calibration p = min(1, e^b q^a) fitted by maximum likelihood (a :class:`TreeScoring` with slope a and bias
b). (3) Replays: each round's recorded nodes re-ranked under a scoring, ``total`` kept, the accepted
tokens counted (1 + the kept nodes on the path); the expansion (the frontier) stays today's. With
``--fit-prompts N`` the fits use the first N prompts and the replay reports the rest too.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path
from typing import Any

from drafts.neural.tree_search import TreeNode, TreeScoring, select

BINS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.01)
SLOPES = tuple(round(0.5 + 0.05 * i, 2) for i in range(41))  # 0.5 .. 2.5
BIASES = tuple(round(-2.0 + 0.05 * i, 2) for i in range(51))  # -2.0 .. 0.5


def conditional(rounds: list[dict[str, list[Any]]]) -> list[tuple[int, float, int]]:
    """(depth, q, on path) of every node whose parent is on the path (the root is)."""
    out = []
    for r in rounds:
        on = r["on_path"]
        for d, lq, parent, ok in zip(r["depth"], r["log_q"], r["parent"], on, strict=True):
            if parent < 0 or on[parent]:
                out.append((d, math.exp(lq), ok))
    return out


def reliability(rows: list[tuple[int, float, int]]) -> list[str]:
    lines = ["| depth | q bin | nodes | mean q | on path |", "|---|---|---|---|---|"]
    for depth in sorted({d for d, _, _ in rows}):
        at = [(q, ok) for d, q, ok in rows if d == depth]
        for lo, hi in itertools.pairwise(BINS):
            cell = [(q, ok) for q, ok in at if lo <= q < hi]
            if cell:
                mean_q, rate = sum(q for q, _ in cell) / len(cell), sum(ok for _, ok in cell) / len(cell)
                lines.append(f"| {depth} | {lo:.2f}-{min(hi, 1):.2f} | {len(cell)} | {mean_q:.3f} | {rate:.3f} |")
        mean_q, rate = sum(q for q, _ in at) / len(at), sum(ok for _, ok in at) / len(at)
        top = [(q, ok) for q, ok in at if q >= 0.5]
        lines.append(f"| {depth} | all | {len(at)} | {mean_q:.3f} | {rate:.3f} (q>=0.5: {_rate(top)}) |")
    return lines


def _rate(cell: list[tuple[float, int]]) -> str:
    if not cell:
        return "-"
    return f"{sum(q for q, _ in cell) / len(cell):.3f} vs {sum(ok for _, ok in cell) / len(cell):.3f}"


def fit_depth(at: list[tuple[float, int]]) -> tuple[float, float]:
    """Slope a and bias b of p = min(1, e^b q^a) by maximum likelihood on a grid."""
    best = (math.inf, 1.0, 0.0)
    for a, b in itertools.product(SLOPES, BIASES):
        nll = 0.0
        for q, ok in at:
            p = min(1 - 1e-6, max(1e-6, math.exp(b + a * math.log(max(q, 1e-12)))))
            nll -= math.log(p if ok else 1 - p)
        best = min(best, (nll, a, b))
    return best[1], best[2]


def fit(rows: list[tuple[int, float, int]]) -> TreeScoring:
    depths = sorted({d for d, _, _ in rows})
    params = [fit_depth([(q, ok) for d, q, ok in rows if d == depth]) for depth in depths]
    return TreeScoring(tuple(a for a, _ in params), tuple(b for _, b in params))


def replay(rounds: list[dict[str, list[Any]]], scoring: TreeScoring, total: int) -> float:
    """Mean tokens per round (1 + the kept nodes on the path) with each round's nodes re-ranked."""
    tokens = 0
    for r in rounds:
        nodes: list[TreeNode] = []
        for i, (d, lq, parent) in enumerate(zip(r["depth"], r["log_q"], r["parent"], strict=True)):
            base = nodes[parent].score if parent >= 0 else 0.0
            nodes.append(TreeNode(i, parent, d, lq, base + scoring.term(lq, d)))
        tree = select(nodes, total)
        tokens += 1 + sum(r["on_path"][i] for i in tree.tokens)
    return tokens / len(rounds)


def grid_best(rounds: list[dict[str, list[Any]]], total: int) -> tuple[TreeScoring, float]:
    """The one (slope, bias) for every depth with the best replayed tokens per round (a coarse grid)."""
    best = (-1.0, TreeScoring())
    for a in (0.6, 0.8, 0.9, 1.0, 1.1, 1.2, 1.4, 1.7, 2.0):
        for b in (-1.0, -0.6, -0.4, -0.3, -0.2, -0.1, 0.0, 0.1):
            scoring = TreeScoring((a,), (b,))
            best = max(best, (replay(rounds, scoring, total), scoring), key=lambda x: x[0])
    return best[1], best[0]


def analyse(name: str, prompts: list[dict[str, Any]], n_fit: int, total: int) -> dict[str, Any]:
    fit_rounds = [r for p in prompts[:n_fit] for r in p["rounds"]]
    rest_rounds = [r for p in prompts[n_fit:] for r in p["rounds"]]
    rows = conditional(fit_rounds)
    print(f"\n## {name}: reliability on the fit prompts ({n_fit}, {len(fit_rounds)} rounds)\n")
    print("\n".join(reliability(rows)))
    fitted = fit(rows)
    grid, _ = grid_best(fit_rounds, total)
    rules = {"default": TreeScoring(), "fitted": fitted, "grid": grid}
    result: dict[str, Any] = {"fitted": fitted.describe(), "grid": grid.describe(), "replay": {}}
    print(f"\n{name}: tokens per round replayed (total {total}); fitted {fitted.describe()}; grid {grid.describe()}")
    for label, scoring in rules.items():
        on_fit = replay(fit_rounds, scoring, total)
        on_rest = replay(rest_rounds, scoring, total) if rest_rounds else None
        result["replay"][label] = {"fit_prompts": on_fit, "other_prompts": on_rest}
        print(
            f"  {label:8s} fit prompts {on_fit:.3f}  other prompts {on_rest if on_rest is None else f'{on_rest:.3f}'}"
        )
    return result


def replay_table(data: dict[str, Any], scorings: list[TreeScoring], total: int) -> None:
    print("| scoring | " + " | ".join(data["drafts"]) + " |")
    print("|---|" + "---|" * len(data["drafts"]))
    rounds = {name: [r for p in prompts for r in p["rounds"]] for name, prompts in data["drafts"].items()}
    for scoring in scorings:
        cells = [f"{replay(rs, scoring, total):.3f}" for rs in rounds.values()]
        print(f"| {scoring.describe()} | " + " | ".join(cells) + " |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("rounds", type=Path)
    p.add_argument("--fit-prompts", type=int, default=0, help="fit on the first N prompts (default: all)")
    p.add_argument("--total", type=int, default=0, help="nodes kept (default: the recorded tree's TOTAL)")
    p.add_argument("--json", type=Path)
    p.add_argument("--replay", action="append", default=[], help="only replay these scorings (TreeScoring.parse)")
    args = p.parse_args()
    data = json.loads(args.rounds.read_text())
    total = args.total or int(data["config"]["tree"].split(",")[2])
    if args.replay:
        replay_table(data, [TreeScoring.parse(text) for text in args.replay], total)
        return
    out = {}
    for name, prompts in data["drafts"].items():
        out[name] = analyse(name, prompts, args.fit_prompts or len(prompts), total)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
