"""What any re-ranking of a tree's generated nodes could gain: each round's kept nodes on the target's path
(today's rule) against every generated node on the path (a perfect ranking of the same candidates).

    python3 tree_ceiling.py rounds.json [rounds.json ...]

Reads ``tree_rounds.py``'s records; tokens per round = 1 + nodes on the path.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tree_calibration import replay

from drafts.neural.tree_search import TreeScoring


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("rounds", type=Path, nargs="+")
    args = p.parse_args()
    print("| tree | draft | rounds | tokens per round, today's rule | every generated on-path node kept | gap |")
    print("|---|---|---|---|---|---|")
    for path in args.rounds:
        data = json.loads(path.read_text())
        total = int(data["config"]["tree"].split(",")[2])
        for name, prompts in data["drafts"].items():
            rounds = [r for p in prompts for r in p["rounds"]]
            today = replay(rounds, TreeScoring(), total)
            ceiling = sum(1 + sum(r["on_path"]) for r in rounds) / len(rounds)
            tree = data["config"]["tree"]
            print(f"| {tree} | {name} | {len(rounds)} | {today:.3f} | {ceiling:.3f} | {ceiling - today:+.3f} |")


if __name__ == "__main__":
    main()
