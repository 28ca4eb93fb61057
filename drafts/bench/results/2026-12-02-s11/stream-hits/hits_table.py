"""Print the README's tables from stream_hits.py's JSON files.

    cd drafts/bench/results/2026-12-02-s11/stream-hits && python3 hits_table.py hits-sim-*.json hits-forced-*.json

First table: per file, the draft's depth-1 hits (rounds, teacher-forced at every position, forced at the
rounds' roots); second: the simulated streams (every proposal one step late) per shape; third (files run
with --stream): the logged stream against the teacher-forced draft at the same roots.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def hits_row(name: str, run: dict[str, Any]) -> str:
    s = run["summary"]
    top = " / ".join(f"{s['forced_top'][k]:.2f}" for k in ("1", "2", "4", "8"))
    return (
        f"| {name} | {len(run['prompts'])} | {s['rounds']} | {s['rounds_depth1']:.3f} | "
        f"{s['forced_at_round_roots_top1']:.3f} ({s['forced_vs_rounds_disagree']} differ) | {s['positions']} | {top} |"
    )


def simulated_rows(name: str, run: dict[str, Any]) -> list[str]:
    out = []
    for shape, r in run["simulated_summary"].items():
        kept = r["verified_per_step"] / max(r["applied_share"], 1e-9)
        out.append(
            f"| {name} | {shape} | {r['tau']:.3f} | {r['applied_share']:.2f} | {r['accepted_per_step']:.2f} | "
            f"{r['verified_per_step']:.2f} | {kept:.1f} | {r['draft_ms']:.0f} |"
        )
    return out


def stream_row(name: str, run: dict[str, Any]) -> str:
    s = run["stream_summary"]
    lags = "/".join(str(n) for n in s["steps_by_lag_0_1_2_3_4+"])
    return (
        f"| {name} | {run['config']['width']} | {s['steps']} | {s['tau']:.3f} | {lags} | {s['applied_share']:.3f} | "
        f"{s['lag1_first_level_hit']:.3f} | {s['lag1_forced_hit_at_the_same_roots']:.3f} | "
        f"{s['lag1_stream_vs_forced_disagree']} of {s['lag1_compared']} | {s['identical']} |"
    )


def main(paths: list[str]) -> None:
    runs = {Path(p).stem: json.loads(Path(p).read_text()) for p in paths}
    print("| file | prompts | rounds | rounds' depth-1 | forced at their roots | positions | forced top-1/2/4/8 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, run in runs.items():
        print(hits_row(name, run))
    print("\n| file | proposal | tau | applied share | accepted / step | verified / step | kept / applied | draft ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, run in runs.items():
        print("\n".join(simulated_rows(name, run)))
    streamed = {name: run for name, run in runs.items() if "stream_summary" in run}
    if streamed:
        head = "| file | width | steps | tau | steps by lag 0/1/2/3/4+ | applied | lag-1 hit | forced there | differ "
        print("\n" + head + "| = ar |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for name, run in streamed.items():
            print(stream_row(name, run))


if __name__ == "__main__":
    main(sys.argv[1:])
