"""Append the T = 0.7 generators' new lines to the committed answers file (sessions 25-26): the committed
prefix checked (each generator's first KNOWN lines must all be committed), ids deduped, whole lines only.

    python3 drafts/bench/results/loop/append_t07.py --known-a 4750 --known-b 2919          # dry run: what it adds
    python3 drafts/bench/results/loop/append_t07.py --known-a 4750 --known-b 2919 --write  # rewrite the .gz

KNOWN: how many lines of runs/answers-t07.jsonl (A), runs/answers-t07b.jsonl (B) and runs/answers-t07c.jsonl (C,
session 29 on; 0 and no file before) were committed before; after an append, the new counts are those files' line
counts, which it prints as the next `--known-*`. New lines go after the committed ones, A's, then B's, then C's.
"""

import argparse
import gzip
import json
import os
from collections.abc import Callable
from typing import IO

GZ = "drafts/data/generated/smollm2-answers-t07.jsonl.gz"
SOURCES = (("A", "runs/answers-t07.jsonl"), ("B", "runs/answers-t07b.jsonl"), ("C", "runs/answers-t07c.jsonl"))


def read_lines(path: str, opener: Callable[..., IO[str]] = open) -> list[str]:
    if not os.path.exists(path):  # a generator not run yet on this checkout
        return []
    with opener(path, "rt", encoding="utf-8") as f:
        return f.read().split("\n")[:-1]  # split, not splitlines: an answer may hold U+2028


def new_lines(lines: list[str], known: int, ids: set[str], name: str) -> list[str]:
    head = {json.loads(line)["id"] for line in lines[:known]}
    assert head <= ids, f"{name}: its first {known} lines are not all committed"
    new = []
    for line in lines[known:]:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a stop
            continue
        if row["id"] not in ids:
            ids.add(row["id"])
            new.append(line)
    return new


def answer_chars(line: str) -> int:
    return sum(len(turn["value"]) for turn in json.loads(line)["conversations"] if turn["from"] == "gpt")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--known-a", type=int, required=True)
    parser.add_argument("--known-b", type=int, required=True)
    parser.add_argument("--known-c", type=int, default=0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    committed = read_lines(GZ, gzip.open)
    ids = {json.loads(line)["id"] for line in committed}
    out = list(committed)
    counts = []
    for (name, path), known in zip(SOURCES, (args.known_a, args.known_b, args.known_c), strict=True):
        lines = read_lines(path)  # whole lines only: a generator may be writing the next
        counts.append(f"--known-{name.lower()} {len(lines)}")
        new = new_lines(lines, known, ids, name)
        chars = sum(answer_chars(line) for line in new)
        first, last = len(out) + 1, len(out) + len(new)
        print(f"{name}: lines {first}-{last} ({len(new)} conversations, {chars} answer characters)")
        out += new
    if args.write:
        with gzip.open(GZ, "wt", compresslevel=9, encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
    print("total", len(out), "; after --write, the next append takes", " ".join(counts))


if __name__ == "__main__":
    main()
