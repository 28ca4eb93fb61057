"""Session 24: what the GPU machine needs, as session 23's ``prepare_calls.py`` writes it, with this
session's data: no prompts (the train split is answered whole; the device only trains), every
greedy answer as ``answers-old.jsonl.gz`` and every T = 0.7 second answer as ``answers-new.jsonl.gz``
(the committed ``smollm2-answers-t07.jsonl.gz`` and whatever the CPU generators' ``runs/answers-t07*.jsonl``
hold past it). Run it on main, then session 23's ``device_branch.sh`` and calls (README.md here).

    python drafts/bench/results/2026-12-04-s24/gpu/prepare_s24.py [--budget-mib M]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "drafts/bench/results/2026-12-04-s23/gpu"))  # prepare_calls

from prepare_calls import SHIPPED_ANSWERS, pack  # noqa: E402

SAMPLED = ROOT / "drafts/data/generated/smollm2-answers-t07.jsonl.gz"
LOCAL_SAMPLED = (ROOT / "runs/answers-t07.jsonl", ROOT / "runs/answers-t07b.jsonl")  # the CPU generators' files


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=ROOT / ".gpu")
    p.add_argument("--budget-mib", type=float, default=62.0, help="what one call may carry with the tree")
    args = p.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    staging = args.out / "staging"
    staging.mkdir(parents=True)
    with gzip.open(staging / "prompts.jsonl.gz", "wt", encoding="utf-8"):
        pass  # no prompts: device_run.sh's answering step is skipped (GEN_MAX_S=0)
    manifest: dict[str, Any] = {"prompts": {"conversations": 0}, "answers": write_answers(staging)}
    return pack(args.out, staging, manifest, args.budget_mib)


def write_answers(into: Path) -> dict[str, int]:
    """answers-old.jsonl.gz: every greedy answer; answers-new.jsonl.gz: every sampled one, each id once."""
    old, committed = _gz_lines(SHIPPED_ANSWERS), _gz_lines(SAMPLED)
    seen = {str(json.loads(line)["id"]) for line in committed}
    extra = []
    for path in LOCAL_SAMPLED:
        complete = path.read_text("utf-8").split("\n")[:-1] if path.is_file() else []  # a generator may be writing
        for line in complete:
            if line.strip() and (key := str(json.loads(line)["id"])) not in seen:
                seen.add(key)
                extra.append(line)
    for name, lines in (("answers-old.jsonl.gz", old), ("answers-new.jsonl.gz", committed + extra)):
        with gzip.open(into / name, "wt", encoding="utf-8", compresslevel=9) as out:
            out.writelines(line + "\n" for line in lines)
    return {"old_greedy": len(old), "new_sampled_committed": len(committed), "new_sampled_uncommitted": len(extra)}


def _gz_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file if line.strip()]


if __name__ == "__main__":
    sys.exit(main())
