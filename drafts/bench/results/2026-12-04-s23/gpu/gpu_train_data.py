"""device_run.sh's training data: every answer not trained on yet, plus a seeded sample of the trained ones.

    python gpu_train_data.py NEW_GZ GPU_JSONL OLD_GZ OLD_RATIO SEED OUT_JSONL   (prints a JSON summary)

The new answers (committed but not trained on, and the GPU's own) all go in; the old ones are drawn
at random until their characters reach OLD_RATIO of the new ones' (characters stand in for tokens:
the ratio is what matters). moa-train shuffles the file each epoch.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path


def main(new_gz: Path, gpu: Path, old_gz: Path, ratio: float, seed: int, out: Path) -> int:
    new = _lines(new_gz) + (_lines(gpu) if gpu.is_file() else [])
    old = _lines(old_gz)
    random.Random(seed).shuffle(old)
    budget, taken, chars = ratio * sum(len(line) for line in new), [], 0
    for line in old:
        if chars >= budget:
            break
        taken.append(line)
        chars += len(line)
    out.write_text("".join(line + "\n" for line in new + taken), encoding="utf-8")
    summary = {"new": len(new), "new_from_gpu": len(new) - len(_lines(new_gz)), "old_sampled": len(taken),
               "old_available": len(old), "new_chars": sum(len(line) for line in new), "old_chars": chars}  # fmt: skip
    print(json.dumps(summary))
    return 0


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file if line.strip()]


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(Path(a[0]), Path(a[1]), Path(a[2]), float(a[3]), int(a[4]), Path(a[5])))
