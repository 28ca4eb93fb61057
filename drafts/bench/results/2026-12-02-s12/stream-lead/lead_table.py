"""Session 12 (H1): the stream methods' tokens/s against API streaming, per run and pooled over runs.

Each ``moa-bench --remote`` JSON (stream.sh, split runs) interleaves its methods per prompt, so a
method's ratio to API in the same file is the figure; runs differ in load. A method is named by what
it proposes: the lag it drafts for (``~L``; 0: measured, the default when these ran) and the width
(``@W``; 4 the default when these ran).

    cd drafts/bench/results/2026-12-02-s12/stream-lead && python3 lead_table.py split*.json
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from app.bench.methods import API, stream_lag, stream_width


def label(method: str) -> str:
    lag, width = stream_lag(method), stream_width(method)
    return f"lag {lag if lag else 'measured'}, width {4 if width is None else width}"


def main(paths: list[str]) -> None:
    pooled: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    tau: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for path in paths:
        run = json.loads(Path(path).read_text())
        dataset = run["config"]["dataset"]
        for link, methods in run["links"].items():
            api = methods[API]["tokens_per_s"]
            for method, row in methods.items():
                if method != API:
                    key = (dataset, link, label(method))
                    pooled[key].append(row["tokens_per_s"] / api)
                    tau[key].append(row["tau"])
    print("| data set | link | proposal | / API per run | mean / API | tau per run |")
    print("| --- | --- | --- | --- | --- | --- |")
    for key in sorted(pooled):
        ratios = " / ".join(f"{r:.2f}" for r in pooled[key])
        taus = " / ".join(f"{t:.2f}" for t in tau[key])
        print(f"| {' | '.join(key)} | {ratios} | {statistics.mean(pooled[key]):.2f} | {taus} |")


if __name__ == "__main__":
    main(sys.argv[1:])
