"""The README's tables: per file and link, each method's (or A/B arm's) tok/s, time to first token, ratios to API.

python3 later_table.py after-*.json      # moa-bench --remote files (stream.sh), every link in them
python3 later_table.py ab-*.json         # later_ab.py files (one link, the arms as methods)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HEAD = (
    "| run | data set | link | method | tok/s | / API | ttft s | ttft / API's | tok/s after the first | / API "
    "| = ar |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def _links(report: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(data set, {link: {method: figures}}) of either kind of file."""
    if "arms" in report:
        return report["dataset"], {report["link"]: report["arms"]}
    return report["config"]["dataset"], report["links"]


def rows(path: Path) -> list[str]:
    dataset, links = _links(json.loads(path.read_text()))
    run, out = path.stem.split("-")[0], []
    for link, methods in links.items():
        api = methods["api"]
        for name, m in methods.items():
            out.append(
                f"| {run} | {dataset} | {link} | {name} | {m['tokens_per_s']:.2f} "
                f"| {m['tokens_per_s'] / api['tokens_per_s']:.2f} "
                f"| {m['ttft_s']:.2f} | {m['ttft_s'] / api['ttft_s']:.2f} | {m['tokens_per_s_after_first']:.2f} "
                f"| {m['tokens_per_s_after_first'] / api['tokens_per_s_after_first']:.2f} | {m['identical_to_ar']} |"
            )
    return out


def main(paths: list[str]) -> None:
    print(HEAD)
    for path in sorted(paths):
        print("\n".join(rows(Path(path))))


if __name__ == "__main__":
    main(sys.argv[1:])
