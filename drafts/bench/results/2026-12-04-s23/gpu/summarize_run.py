"""device_run.sh's last step: summary.json and the new answers (gzip, under the 16 MiB a file may bring back).

python summarize_run.py WORK OUT MINUTES GEN_S BUDGET_S ELAPSED_S   (session 23: timed training, no probe)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "2026-12-02-s7/gpu"))  # travels with this folder

from gpu_summarize import _answers, _json, _last_rate, _lines  # noqa: E402  (session 7's, shared)


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


def _trained(folder: Path, log: Path) -> dict:
    config = _json(folder / "config.json")
    state = config.get("training", {}).get("state", {})
    done = [row for row in _lines(log) if row.startswith("moa-train: done")]
    return {"tokens_seen": state.get("tokens_seen"), "steps": state.get("step"), "wall_s": state.get("wall_s"),
            "tok_s": _last_rate(log), "done_line": done[-1] if done else None}  # fmt: skip


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(Path(a[0]), Path(a[1]), float(a[2]), int(a[3]), int(a[4]), int(a[5])))
