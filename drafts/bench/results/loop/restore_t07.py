"""Rebuild the T = 0.7 generators' ignored run files from the committed answers file (session 28), on a fresh checkout
where `runs/` is gone: A's lines (seed-1 positions below 8,000) go to runs/answers-t07.jsonl, B's to
runs/answers-t07b.jsonl, so `gen_t07.sh A|B` skips every committed id and continues where the file stands.

    python3 drafts/bench/results/loop/restore_t07.py    # refuses to overwrite; prints the --known-a / --known-b counts

Then `append_t07.py --known-a N --known-b M` with the counts printed (every restored line is committed).
"""

import gzip
import json
from pathlib import Path

from drafts.data.sharegpt import load_sharegpt
from drafts.data.target_answers import shuffled

GZ = Path("drafts/data/generated/smollm2-answers-t07.jsonl.gz")
A_OUT, B_OUT = Path("runs/answers-t07.jsonl"), Path("runs/answers-t07b.jsonl")
B_START = 8_000  # B answers the seed-1 order from this position on (gen_t07.sh)


def main() -> None:
    for out in (A_OUT, B_OUT):
        assert not out.exists(), f"{out} exists: it may hold unappended lines; move it away first"
    position = {conv.id: i for i, conv in enumerate(shuffled(load_sharegpt("train"), 1))}
    with gzip.open(GZ, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]  # split, not splitlines: an answer may hold U+2028
    at = [position[json.loads(line)["id"]] for line in lines]  # each line's seed-1 position
    a_lines = [line for line, pos in zip(lines, at, strict=True) if pos < B_START]
    b_lines = [line for line, pos in zip(lines, at, strict=True) if pos >= B_START]
    A_OUT.parent.mkdir(exist_ok=True)
    for out, part in ((A_OUT, a_lines), (B_OUT, b_lines)):
        out.write_text("".join(line + "\n" for line in part), encoding="utf-8")
    a_at = max(pos for pos in at if pos < B_START) + 1
    b_at = max(at) + 1
    print(f"--known-a {len(a_lines)} --known-b {len(b_lines)}; A at position {a_at:,}, B at {b_at:,}")


if __name__ == "__main__":
    main()
