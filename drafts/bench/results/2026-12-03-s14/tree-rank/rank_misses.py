"""Where the ceiling's gap lies: the on-path nodes a round generates but today's rule does not keep.

    python3 rank_misses.py rounds.json [rounds.json ...]

Reads ``rank_rounds.py``'s records. Per draft: the on-path nodes kept and missed per round, the missed ones by
depth and sibling rank, their cumulative q (e^score) and their place in the ranking of all generated nodes
(``total`` are kept): how many wrong nodes a score would have to put below each of them.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path

from drafts.neural.tree_search import TreeNode, select


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("rounds", type=Path, nargs="+")
    args = p.parse_args()
    for path in args.rounds:
        data = json.loads(path.read_text())
        total = int(data["config"]["tree"].split(",")[2])
        for name, prompts in data["drafts"].items():
            rounds = [r for p in prompts for r in p["rounds"]]
            kept_on, missed = 0, []
            for r in rounds:
                nodes: list[TreeNode] = []
                for i, (d, lq, par) in enumerate(zip(r["depth"], r["log_q"], r["parent"], strict=True)):
                    nodes.append(TreeNode(i, par, d, lq, (nodes[par].score if par >= 0 else 0.0) + lq))
                kept = set(select(nodes, total).tokens)
                place = {i: k for k, i in enumerate(sorted(range(len(nodes)), key=lambda i: -nodes[i].score))}
                for i, on in enumerate(r["on_path"]):
                    if on and i in kept:
                        kept_on += 1
                    elif on:
                        missed.append((r["depth"][i], min(r["rank"][i], 5), math.exp(nodes[i].score), place[i]))
            n, m = len(rounds), len(missed)
            places, qs = sorted(x[3] for x in missed), sorted(x[2] for x in missed)
            print(f"## {name} ({n} rounds, {total} kept of {len(rounds[0]['depth'])} generated)")
            print(f"on-path nodes per round: kept {kept_on / n:.3f}, generated but not kept {m / n:.3f}")
            print("missed by depth:", dict(sorted(Counter(x[0] for x in missed).items())))
            print("missed by sibling rank (5 = 5+):", dict(sorted(Counter(x[1] for x in missed).items())))
            quartiles = f"{places[m // 4]}, {places[m // 2]}, {places[3 * m // 4]}"
            print(f"their place among all nodes by score: quartiles {quartiles}")
            print(f"their cumulative q: median {qs[m // 2]:.4f}, 3rd quartile {qs[3 * m // 4]:.4f}, max {qs[-1]:.4f}\n")


if __name__ == "__main__":
    main()
