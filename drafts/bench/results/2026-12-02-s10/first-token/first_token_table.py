"""The README's tables: per file, each method's (or A/B arm's) tok/s, time to first token, and ratios to API.

python3 first_token_table.py before-*.json after-*.json     # moa-bench --remote files
python3 first_token_table.py ab-*.json                      # first_token_ab.py files (arms)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HEAD = (
    "| run | data set | method | tok/s | / API | ttft s | ttft - API's s | tok/s after the first | / API | = ar |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def rows(path: Path) -> list[str]:
    report = json.loads(path.read_text())
    run = path.stem.split("-")[0]
    if "arms" in report:  # first_token_ab.py: one link, the arms as methods
        report = {"config": {"dataset": report["dataset"]}, "links": {report["link"]: report["arms"]}}
    dataset = report["config"]["dataset"]
    out = []
    for methods in report["links"].values():
        api = methods["api"]
        for name, m in methods.items():
            out.append(
                f"| {run} | {dataset} | {name} | {m['tokens_per_s']:.2f} "
                f"| {m['tokens_per_s'] / api['tokens_per_s']:.2f} "
                f"| {m['ttft_s']:.2f} | {m['ttft_s'] - api['ttft_s']:+.2f} | {m['tokens_per_s_after_first']:.2f} "
                f"| {m['tokens_per_s_after_first'] / api['tokens_per_s_after_first']:.2f} | {m['identical_to_ar']} |"
            )
    return out


PROBE_HEAD = (
    "| data set | prompt tokens | Prefill chunks | tokens a chunk | s between replies | last chunk's reply s "
    "| intake done s | first Verify's reply s | ttft s |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def probe_rows(path: Path) -> list[str]:
    report, out = json.loads(path.read_text()), []
    for r in report["rows"]:
        chunks = r["chunks"]
        gap = (chunks[-1]["reply_s"] - chunks[0]["reply_s"]) / max(1, len(chunks) - 1)
        out.append(
            f"| {report['dataset']} | {r['prompt_tokens']} | {len(chunks)} "
            f"| {chunks[0]['tokens']}-{chunks[-1]['tokens']} "
            f"| {gap:.2f} | {chunks[-1]['reply_s']:.2f} | {r['intake_done']:.2f} | {r['first_verify_reply_s']:.2f} "
            f"| {r['ttft_s']:.2f} |"
        )
    return out


def main(paths: list[str]) -> None:
    probes = [p for p in paths if "arms" not in (report := json.loads(Path(p).read_text())) and "config" not in report]
    if probes:
        print(PROBE_HEAD)
        print("\n".join(row for p in sorted(probes) for row in probe_rows(Path(p))))
        paths = [p for p in paths if p not in probes]
    if not paths:
        return
    print(HEAD)
    for path in sorted(paths, key=lambda p: (_dataset(Path(p)), Path(p).stem)):
        print("\n".join(rows(Path(path))))


def _dataset(path: Path) -> str:
    report = json.loads(path.read_text())
    return str(report["dataset"] if "arms" in report else report["config"]["dataset"])


if __name__ == "__main__":
    main(sys.argv[1:])
