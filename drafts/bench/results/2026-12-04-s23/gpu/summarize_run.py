"""device_run.sh's last step: summary.json and the new answers (gzip, under the 16 MiB a file may bring back).

python summarize_run.py WORK OUT MINUTES GEN_S BUDGET_S ELAPSED_S   (session 23: timed training, no probe)
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

MAX_BACK = 15 * 2**20  # bytes: a returned file may be 16 MiB


def main(work: Path, out: Path, minutes: float, gen_s: int, budget_s: int, elapsed_s: int) -> int:
    summary = {
        "target": _json(work / "target.json"),
        "answers": _answers(work / "answers.jsonl", work / "answers.log", out / "answers.jsonl.gz", gen_s),
        "training": {
            "max_minutes_each": minutes,
            "data": _json(work / "train_data.json"),
            **{kind: _trained(work / f"train-{kind}", work / f"train-{kind}.log") for kind in ("moa", "eagle")},
        },
        "budget_s": budget_s,
        "elapsed_s": elapsed_s,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=1))
    return 0


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def _answers(answers: Path, log: Path, back: Path, gen_s: int) -> dict:
    lines = [x for x in answers.read_text(encoding="utf-8").split("\n") if x.strip()] if answers.is_file() else []
    kept = 0
    with gzip.open(back, "wt", encoding="utf-8") as file:
        for line in lines:
            if back.stat().st_size > MAX_BACK:  # the compressed size so far (flushed in blocks): stop short
                break
            file.write(line + "\n")
            kept += 1
    done = [row for row in _lines(log) if row.startswith("target_answers: done")]
    return {
        "seconds": gen_s,
        "conversations": len(lines),
        "brought_back": kept,
        "done_line": done[-1] if done else None,
    }


def _trained(folder: Path, log: Path) -> dict:
    config = _json(folder / "config.json")
    state = config.get("training", {}).get("state", {})
    done = [row for row in _lines(log) if row.startswith("moa-train: done")]
    return {"tokens_seen": state.get("tokens_seen"), "steps": state.get("step"), "wall_s": state.get("wall_s"),
            "tok_s": _last_rate(log), "done_line": done[-1] if done else None}  # fmt: skip


def _last_rate(log: Path) -> int | None:
    rates = re.findall(r"(\d+) tok/s", log.read_text(errors="replace")) if log.is_file() else []
    return int(rates[-1]) if rates else None


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").replace("\r", "\n").splitlines() if path.is_file() else []


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(Path(a[0]), Path(a[1]), float(a[2]), int(a[3]), int(a[4]), int(a[5])))
