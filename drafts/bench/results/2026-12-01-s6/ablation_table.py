"""The ablation's table (ablation.sh): per method, tau and acceptance by depth from the one
interleaved moa-bench JSON, and how each variant was trained (tokens, optimizer steps, minutes,
tokens/s on the one core, the last smoothed loss and top-1) from its checkpoint's config.json.

    python3 ablation_table.py BENCH.json RUNS_PREFIX VARIANT...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def training_row(run: Path) -> str:
    meta = json.loads((run / "config.json").read_text())
    state = meta["training"]["state"]
    wall = state["wall_s"]
    last = state["last"]
    depths = " ".join(f"{last[k]:.3f}" for k in ("top1.2", "top1.3") if k in last)
    return (
        f"{state['tokens_seen']:,} | {state['step']} | {wall / 60:.1f} | "
        f"{state['tokens_seen'] / max(wall, 1e-9):.0f} | "
        f"{last.get('loss', float('nan')):.3f} | {last.get('top1', float('nan')):.3f}{' / ' + depths if depths else ''}"
    )


def main(argv: list[str]) -> int:
    bench, prefix, variants = Path(argv[0]), argv[1], argv[2:]
    data = json.loads(bench.read_text())
    methods, config = data["methods"], data["config"]
    depths = sorted({int(d) for m in methods.values() for d in m.get("per_position_acceptance", {})})
    print(
        f"{config['dataset']}, T={config['temperature']}, {config['prompts']} prompts x {config['max_new_tokens']} "
        f"tokens, {config['draft_shape']}, {config['cpu']}, {config['date']}\n"
    )
    head = [
        "method",
        "tau",
        "speedup",
        *(f"acc@{d}" for d in depths),
        "identical to ar",
        "train tokens",
        "steps",
        "min",
        "tok/s",
        "last loss",
        "last top-1 (/ steps 2, 3)",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, m in methods.items():
        if name == "ar":
            continue
        acc = m.get("per_position_acceptance", {})
        cells = [
            name,
            f"{m['tau']:.3f}",
            f"{m['speedup']:.2f}",
            *(f"{acc.get(str(d), 0.0):.3f}" for d in depths),
            str(m.get("identical_to_ar")),
        ]
        run = Path(f"{prefix}-{name}")
        train = training_row(run) if name in variants and (run / "config.json").exists() else "shipped | | | | |"
        print("| " + " | ".join(cells) + " | " + train + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
