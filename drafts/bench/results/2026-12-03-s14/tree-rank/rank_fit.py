"""Per-node tree scores that see more than q, fitted and replayed on ``rank_rounds.py``'s records.

    python3 rank_fit.py moa.json eagle.json [--fit-prompts 12] [--json out.json]

(1) Reliability by sibling rank: among nodes whose parent is on the target's path, q against how often the
node is on the path too. (2) A universal per-rank power law p = min(1, e^b_r q^a_r) (rank 0, 1, 2, 3+),
fitted by maximum likelihood on both drafts' fit prompts: ``TreeScoring(rank_slope=a, rank_bias=b)``.
(3) A richer logistic model of P(on path | parent on path) from log q, sibling rank, the distribution's
entropy and top-1 log q, depth and the parent's log q: what those features could do at best by calibration
(its log p as the term, capped at 0). (4) Replays: each round's recorded nodes re-ranked, ``total`` kept,
tokens per round = 1 + the kept nodes on the path (the expansion stays today's), and each rule's log loss
on the nodes whose parent is on the path. With ``--fit-prompts N`` the fits use the first N prompts of each
draft and the replay reports the rest too.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from drafts.neural.tree_search import TreeNode, TreeScoring, select

Round = dict[str, list[Any]]
Term = Callable[[Round, int], float]  # (round, node index) -> the node's term
BINS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.01)
RANKS = 4  # ranks 0, 1, 2 and 3+ get their own parameters
SLOPES = tuple(round(0.5 + 0.05 * i, 2) for i in range(21))  # 0.5 .. 1.5
BIASES = tuple(round(-1.0 + 0.05 * i, 2) for i in range(31))  # -1.0 .. 0.5


def conditional(rounds: list[Round]) -> list[tuple[Round, int]]:
    """(round, node) of every node whose parent is on the path (the root is)."""
    return [(r, i) for r in rounds for i, par in enumerate(r["parent"]) if par < 0 or r["on_path"][par]]


def reliability(rows: list[tuple[Round, int]]) -> list[str]:
    lines = ["| rank | q bin | nodes | mean q | on path |", "|---|---|---|---|---|"]
    for rank in range(RANKS):
        at = [(math.exp(r["log_q"][i]), r["on_path"][i]) for r, i in rows if min(r["rank"][i], RANKS - 1) == rank]
        label = f"{rank}+" if rank == RANKS - 1 else str(rank)
        for lo, hi in itertools.pairwise(BINS):
            cell = [(q, ok) for q, ok in at if lo <= q < hi]
            if len(cell) >= 20:
                lines.append(f"| {label} | {lo:.2f}-{min(hi, 1):.2f} | {len(cell)} | {_mean(cell)} |")
        lines.append(f"| {label} | all | {len(at)} | {_mean(at)} |")
    return lines


def _mean(cell: list[tuple[float, int]]) -> str:
    return f"{sum(q for q, _ in cell) / len(cell):.3f} | {sum(ok for _, ok in cell) / len(cell):.3f}"


def fit_power(at: list[tuple[float, int]]) -> tuple[float, float]:
    """Slope a and bias b of p = min(1, e^b q^a) by maximum likelihood on a grid (``at``: log q, on path)."""
    best = (math.inf, 1.0, 0.0)
    for a, b in itertools.product(SLOPES, BIASES):
        nll = 0.0
        for lq, ok in at:
            p = min(1 - 1e-6, max(1e-6, math.exp(b + a * lq)))
            nll -= math.log(p if ok else 1 - p)
        best = min(best, (nll, a, b))
    return best[1], best[2]


def fit_rank(rows: list[tuple[Round, int]]) -> TreeScoring:
    params = []
    for rank in range(RANKS):
        at = [(r["log_q"][i], r["on_path"][i]) for r, i in rows if min(r["rank"][i], RANKS - 1) == rank]
        params.append(fit_power(at))
    return TreeScoring(rank_slope=tuple(a for a, _ in params), rank_bias=tuple(b for _, b in params))


def features(r: Round, i: int) -> list[float]:
    """log q, rank one-hot (0, 1, 2), log q at rank 0, entropy, the top-1 log q, depth, the parent's log q."""
    rank, lq, par = r["rank"][i], r["log_q"][i], r["parent"][i]
    top1 = r["log_q"][i - rank]  # siblings are recorded best first
    parent_lq = r["log_q"][par] if par >= 0 else 0.0
    ranks = [float(rank == k) for k in range(RANKS - 1)]
    return [lq, *ranks, lq * (rank == 0), r["entropy"][i], top1, r["depth"][i] / 6, parent_lq, 1.0]


def fit_logistic(rows: list[tuple[Round, int]]) -> list[float]:
    x = torch.tensor([features(r, i) for r, i in rows], dtype=torch.float64)
    y = torch.tensor([float(r["on_path"][i]) for r, i in rows], dtype=torch.float64)
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=500, line_search_fn="strong_wolfe")

    def loss() -> torch.Tensor:
        opt.zero_grad()
        out = torch.nn.functional.binary_cross_entropy_with_logits(x @ w, y)
        out.backward()
        return out

    opt.step(loss)
    return w.detach().tolist()


def logistic_term(w: list[float]) -> Term:
    def term(r: Round, i: int) -> float:
        z = sum(a * b for a, b in zip(w, features(r, i), strict=True))
        return min(0.0, -math.log1p(math.exp(-z)) if z > -30 else z)

    return term


def scoring_term(scoring: TreeScoring) -> Term:
    return lambda r, i: scoring.term(r["log_q"][i], r["depth"][i], r["rank"][i])


def log_loss(rows: list[tuple[Round, int]], term: Term) -> float:
    """Mean cross-entropy (nats per node) of P(on path | parent on path) = e^term: what a score knows."""
    if not rows:
        return math.nan
    total = 0.0
    for r, i in rows:
        p = min(1 - 1e-6, max(1e-6, math.exp(term(r, i))))
        total -= math.log(p if r["on_path"][i] else 1 - p)
    return total / len(rows)


def replay(rounds: list[Round], term: Term, total: int) -> float:
    """Mean tokens per round (1 + the kept nodes on the path) with each round's nodes re-ranked."""
    tokens = 0
    for r in rounds:
        nodes: list[TreeNode] = []
        for i, (d, lq, parent) in enumerate(zip(r["depth"], r["log_q"], r["parent"], strict=True)):
            base = nodes[parent].score if parent >= 0 else 0.0
            nodes.append(TreeNode(i, parent, d, lq, base + term(r, i)))
        tree = select(nodes, total)
        tokens += 1 + sum(r["on_path"][i] for i in tree.tokens)
    return tokens / len(rounds)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("rounds", type=Path, nargs="+")
    p.add_argument("--fit-prompts", type=int, default=0, help="fit on the first N prompts of each (default: all)")
    p.add_argument("--replay", action="append", default=[], help="also replay these scorings (TreeScoring.parse)")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    torch.set_num_threads(1)
    drafts: dict[str, list[dict[str, Any]]] = {}
    total = 0
    for path in args.rounds:
        data = json.loads(path.read_text())
        drafts |= data["drafts"]
        total = int(data["config"]["tree"].split(",")[2])
    n_fit = args.fit_prompts or min(len(v) for v in drafts.values())
    fit_rounds = {name: [r for p in prompts[:n_fit] for r in p["rounds"]] for name, prompts in drafts.items()}
    rest_rounds = {name: [r for p in prompts[n_fit:] for r in p["rounds"]] for name, prompts in drafts.items()}
    rows = {name: conditional(rounds) for name, rounds in fit_rounds.items()}
    for name, at in rows.items():
        print(f"\n## {name}: reliability by sibling rank on the fit prompts ({n_fit})\n")
        print("\n".join(reliability(at)))
    pooled = [row for at in rows.values() for row in at]
    per_rank = fit_rank(pooled)
    w = fit_logistic(pooled)
    print(f"\nuniversal per-rank fit ({len(pooled)} nodes): {per_rank.describe()}")
    print("logistic weights (log q, rank 0/1/2, log q at rank 0, entropy, top-1 log q, depth/6, parent log q, 1):")
    print("  " + " ".join(f"{v:+.3f}" for v in w))
    terms: dict[str, Term] = {"default": scoring_term(TreeScoring()), "per-rank": scoring_term(per_rank)}
    terms |= {text: scoring_term(TreeScoring.parse(text)) for text in args.replay}
    terms["logistic"] = logistic_term(w)
    out: dict[str, Any] = {"fit_prompts": n_fit, "per_rank": per_rank.describe(), "logistic": w, "replay": {}}
    print(f"\n| rule | {' | '.join(f'{n}: fit prompts | {n}: other' for n in drafts)} |")
    print("|---|" + "---|---|" * len(drafts))
    for label, term in terms.items():
        cells: dict[str, Any] = {}
        for name in drafts:
            rest = rest_rounds[name]
            cells[name] = (replay(fit_rounds[name], term, total), replay(rest, term, total) if rest else None)
        out["replay"][label] = cells
        shown = [f"{a:.3f} | {'-' if b is None else f'{b:.3f}'}" for a, b in cells.values()]
        print(f"| {label} | {' | '.join(shown)} |")
    print("\n| rule | " + " | ".join(f"{n}: log loss, fit prompts | {n}: other" for n in drafts) + " |")
    print("|---|" + "---|---|" * len(drafts))
    for label, term in terms.items():
        losses = {n: (log_loss(rows[n], term), log_loss(conditional(rest_rounds[n]), term)) for n in drafts}
        out["replay"][label] |= {f"{n}_log_loss": v for n, v in losses.items()}
        print(f"| {label} | " + " | ".join(f"{a:.4f} | {b:.4f}" for a, b in losses.values()) + " |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
