"""Session 24: what the GPU machine needs, as session 23's ``prepare_calls.py`` writes it, with this
session's data: every greedy answer as ``answers-old.jsonl.gz`` and every T = 0.7 second answer as
``answers-new.jsonl.gz`` (the committed ``smollm2-answers-t07.jsonl.gz`` and whatever the CPU generators'
``runs/answers-t07*.jsonl`` hold past it); prompts only with ``--answer-from/--answer-to`` (positions of the
seed-1 order for the device to answer at T = 0.7: the train split has no unanswered question, so session 24's
device only trained). Run it on main, then session 23's ``device_branch.sh`` and calls (README.md here).

    python drafts/bench/results/2026-12-04-s24/gpu/prepare_s24.py [--answer-from 4000 --answer-to 8000] [--budget-mib M]
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "drafts/bench/results/2026-12-04-s23/gpu"))  # prepare_calls

from prepare_calls import SHIPPED_ANSWERS, calls_parser, fresh_staging, gzip_and_remove, pack  # noqa: E402

from drafts.data.conversations import Conversation  # noqa: E402
from drafts.data.sharegpt import load_sharegpt  # noqa: E402
from drafts.data.target_answers import shuffled, write_prompts  # noqa: E402

SAMPLED = ROOT / "drafts/data/generated/smollm2-answers-t07.jsonl.gz"
LOCAL_SAMPLED = tuple(ROOT / f"runs/answers-t07{x}.jsonl" for x in ("", "b", "c"))  # CPU generators A, B, C


def main() -> int:
    p = calls_parser(__doc__)
    p.add_argument("--answer-from", type=int, default=0, help="prompts for the device: from this position ...")
    p.add_argument("--answer-to", type=int, default=0, help="... to this one of the seed-1 order (none by default)")
    args = p.parse_args()
    staging = fresh_staging(args.out)
    prompts = write_sampled_prompts(staging / "prompts.jsonl.gz", args.answer_from, args.answer_to)
    manifest: dict[str, Any] = {"prompts": prompts, "answers": write_answers(staging)}
    return pack(args.out, staging, manifest, args.budget_mib)


def write_sampled_prompts(path: Path, start: int, stop: int) -> dict[str, object]:
    """Train conversations at positions start..stop-1 of the seed-1 order (the T = 0.7 generators' order), less
    those with a sampled answer already, for the device to answer again (device_run.sh with GEN_SHARE=1.0
    GEN_TEMP=0.7 GEN_SEED=1); an empty file when start == stop (training only, GEN_MAX_S=0)."""
    chosen: list[Conversation] = []
    if stop > start:
        held = {conv.id for conv in load_sharegpt("heldout")}
        answered = {str(json.loads(line)["id"]) for line in _sampled_lines()}
        chosen = [c for c in shuffled(load_sharegpt("train"), 1)[start:stop] if c.id not in answered]
        assert not held & {c.id for c in chosen}, "a held-out conversation among the prompts"
    plain = path.with_suffix("")
    count = write_prompts(plain, chosen)
    gzip_and_remove(plain, path)
    return {"conversations": count, "seed": 1, "positions": [start, stop]}


def write_answers(into: Path) -> dict[str, int]:
    """answers-old.jsonl.gz: every greedy answer; answers-new.jsonl.gz: every sampled one, each id once."""
    old, committed = _gz_lines(SHIPPED_ANSWERS), _gz_lines(SAMPLED)
    seen = {str(json.loads(line)["id"]) for line in committed}
    extra = []
    for line in _local_sampled_lines():
        if (key := str(json.loads(line)["id"])) not in seen:
            seen.add(key)
            extra.append(line)
    for name, lines in (("answers-old.jsonl.gz", old), ("answers-new.jsonl.gz", committed + extra)):
        with gzip.open(into / name, "wt", encoding="utf-8", compresslevel=9) as out:
            out.writelines(line + "\n" for line in lines)
    return {"old_greedy": len(old), "new_sampled_committed": len(committed), "new_sampled_uncommitted": len(extra)}


def _sampled_lines() -> list[str]:
    return _gz_lines(SAMPLED) + _local_sampled_lines()


def _local_sampled_lines() -> list[str]:
    """The CPU generators' complete lines (a generator may be writing the last one)."""
    lines = []
    for path in LOCAL_SAMPLED:
        lines += [line for line in path.read_text("utf-8").split("\n")[:-1] if line.strip()] if path.is_file() else []
    return lines


def _gz_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file if line.strip()]


if __name__ == "__main__":
    sys.exit(main())
