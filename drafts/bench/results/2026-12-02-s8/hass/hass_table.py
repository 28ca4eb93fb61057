"""The HASS top-K on/off table (hass.sh): per method, tau and acceptance by depth from the one
interleaved moa-bench JSON and how each run was trained (session 6's ablation_table.training_row);
then, per kind, the on - off difference of tau and of the acceptance rate, paired by prompt: the pooled
difference (tau over all rounds, as moa-bench reports it) with a paired bootstrap standard error
(prompts resampled, 2,000 times, seed 0), the mean of the per-prompt differences with its standard
error (sd / sqrt(n); it weighs a short answer as much as a long one), and on how many prompts
on > off; the same for each run against the shipped draft of its kind.

    python3 hass_table.py BENCH.json RUNS_PREFIX
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

ABLATION_TABLE = Path(__file__).resolve().parents[2] / "2026-12-01-s6" / "ablation_table.py"
PAIRS = (
    ("moa-on", "moa-off"),
    ("eagle-on", "eagle-off"),
    ("moa-on", "moa"),
    ("moa-off", "moa"),
    ("eagle-on", "eagle"),
    ("eagle-off", "eagle"),
)


def load_training_row() -> Any:
    spec = importlib.util.spec_from_file_location("ablation_table", ABLATION_TABLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.training_row


def prompt_tau(p: dict[str, int]) -> float:
    return p["round_tokens"] / p["rounds"] if p["rounds"] else 1.0


def prompt_accept(p: dict[str, int]) -> float:
    return p["accepted"] / p["proposed"] if p["proposed"] else 0.0


def paired(a: list[float], b: list[float]) -> tuple[float, float, int]:
    """Mean of a_i - b_i, its standard error, and how many a_i > b_i."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    mean = sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1)) if len(d) > 1 else float("nan")
    return mean, sd / math.sqrt(len(d)), sum(x > 0 for x in d)


def pooled_tau(prompts: list[dict[str, int]]) -> float:
    rounds = sum(p["rounds"] for p in prompts)
    return sum(p["round_tokens"] for p in prompts) / rounds if rounds else 1.0


def bootstrap_se(a: list[dict[str, int]], b: list[dict[str, int]], repeats: int = 2000) -> float:
    """Standard error of pooled_tau(a) - pooled_tau(b), the prompts resampled in pairs."""
    rng = random.Random(0)
    n = len(a)
    diffs = []
    for _ in range(repeats):
        pick = [rng.randrange(n) for _ in range(n)]
        diffs.append(pooled_tau([a[i] for i in pick]) - pooled_tau([b[i] for i in pick]))
    mean = sum(diffs) / repeats
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (repeats - 1))


def method_rows(methods: dict[str, Any], prefix: str, training_row: Any) -> list[str]:
    depths = sorted({int(d) for m in methods.values() for d in m.get("per_position_acceptance", {})})
    head = [
        "method",
        "tau",
        "accept",
        *(f"acc@{d}" for d in depths),
        "identical to ar",
        "speedup",
        "train tokens",
        "steps",
        "min",
        "tok/s",
        "last loss",
        "last top-1",
    ]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in methods.items():
        if name == "ar":
            continue
        acc = m.get("per_position_acceptance", {})
        run = Path(f"{prefix}-{name}")
        train = training_row(run) if (run / "config.json").exists() else "shipped | | | | |"
        cells = [
            name,
            f"{m['tau']:.3f}",
            f"{m['accept_rate']:.3f}",
            *(f"{acc.get(str(d), 0.0):.3f}" for d in depths),
            str(m.get("identical_to_ar")),
            f"{m['speedup']:.2f}",
        ]
        rows.append("| " + " | ".join(cells) + " | " + train + " |")
    return rows


def pair_rows(methods: dict[str, Any]) -> list[str]:
    head = [
        "a - b",
        "pooled tau diff +- bootstrap SE",
        "t",
        "per-prompt tau diff +- SE",
        "prompts a > b",
        "per-prompt accept diff +- SE",
    ]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a, b in PAIRS:
        if a not in methods or b not in methods:
            continue
        pa, pb = methods[a]["per_prompt"], methods[b]["per_prompt"]
        tau, tau_se, wins = paired([prompt_tau(p) for p in pa], [prompt_tau(p) for p in pb])
        acc, acc_se, _ = paired([prompt_accept(p) for p in pa], [prompt_accept(p) for p in pb])
        pooled, pooled_se = pooled_tau(pa) - pooled_tau(pb), bootstrap_se(pa, pb)
        t = pooled / pooled_se if pooled_se else float("nan")
        rows.append(
            f"| {a} - {b} | {pooled:+.3f} +- {pooled_se:.3f} | {t:+.1f} | {tau:+.3f} +- {tau_se:.3f} | "
            f"{wins}/{len(pa)} | {acc:+.3f} +- {acc_se:.3f} |"
        )
    return rows


def main(argv: list[str]) -> int:
    bench, prefix = Path(argv[0]), argv[1]
    data = json.loads(bench.read_text())
    methods, config = data["methods"], data["config"]
    print(
        f"{config['dataset']}, T={config['temperature']}, {config['prompts']} prompts x {config['max_new_tokens']} "
        f"tokens, {config['draft_shape']}, {config['cpu']}, {config['date']}\n"
    )
    print("\n".join(method_rows(methods, prefix, load_training_row())))
    print("\nPaired by prompt (same prompts, same greedy text):\n")
    print("\n".join(pair_rows(methods)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
