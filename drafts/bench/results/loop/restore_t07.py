"""Rebuild the T = 0.7 generators' ignored run files from the committed answers file (session 28), on a fresh checkout
where `runs/` is gone: A's lines (seed-1 positions below 8,000) go to runs/answers-t07.jsonl, B's (8,000-15,499)
to runs/answers-t07b.jsonl, C's (15,500 on, session 29) to runs/answers-t07c.jsonl, so `gen_t07.sh B|C` skips every
committed id and continues where the file stands.

    python3 drafts/bench/results/loop/restore_t07.py    # refuses to overwrite; prints the --known-a/-b/-c counts

Then `append_t07.py --known-a N --known-b M --known-c K` with the counts printed (every restored line is committed).
"""

import gzip
import json
from pathlib import Path

from append_t07 import GZ, SOURCES, read_lines  # beside this file: the generators' files, one list

from drafts.data.sharegpt import load_sharegpt
from drafts.data.target_answers import shuffled

OUTS = tuple(Path(path) for _, path in SOURCES)
STARTS = (0, 8_000, 15_500)  # A, B, C answer the seed-1 order from these positions on (gen_t07.sh)


def generator_of(pos: int) -> int:
    """0, 1 or 2: which of A, B, C answers seed-1 position ``pos``."""
    return sum(pos >= start for start in STARTS) - 1


def main() -> None:
    for out in OUTS:
        assert not out.exists(), f"{out} exists: it may hold unappended lines; move it away first"
    position = {conv.id: i for i, conv in enumerate(shuffled(load_sharegpt("train"), 1))}
    lines = read_lines(GZ, gzip.open)
    at = [position[json.loads(line)["id"]] for line in lines]  # each line's seed-1 position
    parts: list[list[str]] = [[], [], []]
    reached = list(STARTS)  # each generator's max position + 1
    for line, pos in zip(lines, at, strict=True):
        which = generator_of(pos)
        parts[which].append(line)
        reached[which] = max(reached[which], pos + 1)
    OUTS[0].parent.mkdir(exist_ok=True)
    for out, part in zip(OUTS, parts, strict=True):
        out.write_text("".join(line + "\n" for line in part), encoding="utf-8")
    known = " ".join(f"--known-{name} {len(part)}" for name, part in zip("abc", parts, strict=True))
    print(f"{known}; A at position {reached[0]:,}, B at {reached[1]:,}, C at {reached[2]:,}")


if __name__ == "__main__":
    main()
