"""Print the speculative-streaming table from ``moa-bench --remote`` JSON files (stream.sh's runs).

    python3 drafts/bench/results/2026-12-02-s9/stream/stream_table.py drafts/bench/results/2026-12-02-s9/stream/*.json

One row per data set, shape and link: tokens/s of round-based MoA, MoA-stream and API streaming,
MoA-stream / API and MoA / API (the issue's goal: MoA on 4g at least API streaming's tokens/s),
the same ratios after each answer's first token (the prompt's prefill and first token left out),
server steps per 100 tokens (target forwards: the prompt's, then one per Verify or per streamed
step), tokens per server step ("tau"), round trips and bytes per token, and whether every method
gave ar's tokens. Ratios are within one run (methods interleaved per prompt): absolute tok/s are
noisy on a shared core.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

METHODS = ("moa", "moa-stream", "api")


def shape(config: dict[str, Any]) -> str:
    if config.get("tree"):
        return f"tree {config['tree']}"
    return f"chain {config['chain']}" if config.get("chain") else "paced chain"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def rows(run: dict[str, Any]) -> list[str]:
    config, out = run["config"], []
    for link, methods in run["links"].items():
        r = {m: methods[m] for m in METHODS if m in methods}
        if len(r) < len(METHODS):
            continue
        tps = {m: r[m]["tokens_per_s"] for m in METHODS}
        same = all(r[m]["identical_to_ar"] for m in METHODS)
        stream = r["moa-stream"]
        after = {m: r[m].get("tokens_per_s_after_first") or 0.0 for m in METHODS}
        out.append(
            f"| {config['dataset']} | {shape(config)} | {link} | {tps['moa']:.2f} | {tps['moa-stream']:.2f} | "
            f"{tps['api']:.2f} | {ratio(tps['moa-stream'], tps['api'])} | {ratio(tps['moa'], tps['api'])} | "
            f"{ratio(after['moa-stream'], after['api'])} | {ratio(after['moa'], after['api'])} | "
            f"{r['moa']['target_forwards_per_100']:.1f} | {stream['target_forwards_per_100']:.1f} | "
            f"{r['api']['target_forwards_per_100']:.1f} | {stream['tau']:.2f} | "
            f"{stream['round_trips_per_100']:.1f} | {stream['bytes_up_per_token']:.0f} / "
            f"{stream['bytes_down_per_token']:.0f} | {same} |"
        )
    return out


def main(paths: list[str]) -> None:
    print(
        "| data set | shape | link | MoA tok/s | MoA-stream tok/s | API tok/s | stream / API | MoA / API "
        "| stream / API after the first token | MoA / API after the first token "
        "| steps/100 MoA | steps/100 stream | steps/100 API | stream tau | stream rt/100 "
        "| stream B up / down per token | = ar |"
    )
    print("|" + " --- |" * 17)
    for path in sorted(paths):
        for row in rows(json.loads(Path(path).read_text())):
            print(row)


if __name__ == "__main__":
    main(sys.argv[1:])
