"""Session 14, once: put back the history a resumed run dropped (fixed in moa-train since, 64503ab).

runs/s14-{moa,eagle} began in session 13 with `--init` from the shipped session-13 drafts and were resumed
in session 14; the resume wrote a config.json whose "training" no longer said where the weights began. This
adds "init", "init_training" (the shipped session-13 config's "training", read from git at ae9c250, the
commit that shipped them) and "first_command" (the command next_training.sh ran first).

    python3 drafts/bench/results/2026-12-03-s14/ship/restore_history.py runs/s14-moa runs/s14-eagle
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SHIPPED_S13 = "ae9c250"  # the commit that shipped the session-13 drafts (the s14 runs' starting weights)
FIRST = (
    "moa-train --draft {kind} --init drafts/checkpoints/smollm2-135m-instruct/{kind}{staircase} "
    "--data runs/s14_answers.jsonl --tokens 900000 --lr 1e-4 --topk-weight 1.0 --seed 14 "
    "--out runs/s14-{kind} --checkpoint-every 20 --feature-cache runs/s5-features-moa"
)


def restore(run: Path) -> None:
    path = run / "config.json"
    config = json.loads(path.read_text())
    kind = config["kind"]
    shipped = subprocess.run(
        ["git", "show", f"{SHIPPED_S13}:drafts/checkpoints/smollm2-135m-instruct/{kind}/config.json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    training = config["training"]
    training["init"] = f"drafts/checkpoints/smollm2-135m-instruct/{kind}"
    training["init_training"] = json.loads(shipped)["training"]
    training["first_command"] = FIRST.format(kind=kind, staircase=" --no-staircase" if kind == "moa" else "")
    path.write_text(json.dumps(config, indent=2) + "\n")
    print(f"{path}: history restored (init from {SHIPPED_S13})")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        restore(Path(arg))
