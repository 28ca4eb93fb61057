"""Markdown rows for the README from moa-bench JSON files: python md_table.py FILE.json ..."""

import json
import sys
from typing import Any

HEADER = (
    "| dataset | T | dtype | draft shape | prompts × tokens | method | tau | tok/s | speedup vs ar"
    " | pos-1 accept | draft ms/round | verify ms/round | identical to ar |"
)


def row(config: dict[str, Any], method: str, s: dict[str, Any]) -> str:
    p1 = s["per_position_acceptance"].get("1")
    ident = {True: "yes", False: "**no**", None: "-"}[s["identical_to_ar"]]
    cells = [
        config["dataset"],
        f"{config['temperature']:g}",
        config["dtype"],
        config["draft_shape"],
        f"{config['prompts']} × {config['max_new_tokens']}",
        method,
        f"{s['tau']:.2f}",
        f"{s['tokens_per_s']:.1f}",
        f"{s['speedup']:.2f}x",
        "-" if p1 is None else f"{p1:.2f}",
        f"{s['draft_ms_per_round'] or 0:.1f}",
        f"{s['verify_ms_per_round'] or 0:.1f}",
        ident,
    ]
    return "| " + " | ".join(cells) + " |"


def main(paths: list[str]) -> None:
    print(HEADER)
    print("|" + "---|" * 13)
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for method, stats in data["methods"].items():
            print(row(data["config"], method, stats))


if __name__ == "__main__":
    main(sys.argv[1:])
