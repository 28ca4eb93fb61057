"""Re-sync rules scored again from an offline-horizon run's saved tokens (no drafting, deterministic).

Each sample row of ``moa-bench --offline-horizon`` keeps the offline tokens of every method and
the target's reference; here each rule (a :class:`drafts.decoding.resync.ResyncConfig`) runs
through the bench's own measure (:func:`drafts.bench.offline_resync.kept_with_resync`: the common
prefix, then lookup rounds alone; offline tokens kept of the first ``h``, reference ``h + 32``).

    python3 s13_resync_rules.py grid FILE.json [FILE.json ...] --method moa --json OUT.json
    python3 s13_resync_rules.py compare FILE.json ... --method moa,eagle,independent \\
        --rule s12=patience=8 --rule new=patience=32,resume=0123,hold=8,levels=1 --json OUT.json

A rule is ``name=key=value,...`` over ResyncConfig's fields (``resume`` as digits: 0123 is (0, 1, 2, 3);
``levels`` 0/1); unnamed fields keep the *session-12* values (patience 8, resume 1, hold 1, depth-first),
whatever the package's default is now. ``compare``: every rule against the first, paired per sample,
with a 95 % bootstrap interval over prompts (a prompt's cuts resampled together), seeded.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from drafts.bench.offline_resync import RESYNC_PAST, kept_with_resync
from drafts.decoding.resync import ResyncConfig

S12: dict[str, Any] = {"nodes": 32, "depth": 32, "patience": 8, "resume": (1,), "hold": 1, "levels": False}
HORIZON = 32


@dataclass(frozen=True)
class Scored:
    """One rule on one method: per-sample kept tokens and lookup tokens sent."""

    kept: tuple[int, ...]
    nodes: tuple[int, ...]
    prompts: tuple[tuple[str, int], ...]  # (file, prompt index) of each sample: the bootstrap's clusters

    @property
    def mean(self) -> float:
        return sum(self.kept) / len(self.kept)


def parse_rule(text: str) -> tuple[str, ResyncConfig]:
    """``name=key=value,...`` -> (name, config); see the module docstring."""
    name, _, spec = text.partition("=")
    fields: dict[str, Any] = dict(S12)
    for item in filter(None, spec.split(",")):
        key, _, value = item.partition("=")
        if key == "resume":
            fields[key] = tuple(int(d) for d in value)
        elif key == "levels":
            fields[key] = value in ("1", "true", "True")
        else:
            fields[key] = int(value)
    return name, ResyncConfig(**fields)


def describe(config: ResyncConfig) -> str:
    c = asdict(config)
    return (
        f"patience={c['patience']},resume={''.join(map(str, c['resume']))},hold={c['hold']},"
        f"levels={int(c['levels'])},nodes={c['nodes']},depth={c['depth']}"
    )


def load_rows(paths: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    return [(p.name, row) for p in paths for row in json.loads(p.read_text())["samples"]]


def score(rows: list[tuple[str, dict[str, Any]]], method: str, config: ResyncConfig) -> Scored:
    kept, nodes = [], []
    for _, row in rows:
        sample = kept_with_resync(row["offline"][method][:HORIZON], row["reference"][: HORIZON + RESYNC_PAST], config)
        kept.append(sample.kept)
        nodes.append(sample.nodes)
    return Scored(tuple(kept), tuple(nodes), tuple((f, row["prompt"]) for f, row in rows))


def bootstrap(diffs: list[int], clusters: tuple[tuple[str, int], ...], draws: int = 10000) -> tuple[float, float]:
    """95 % interval of the mean paired difference, prompts resampled with all their samples."""
    by: dict[tuple[str, int], list[int]] = {}
    for d, c in zip(diffs, clusters, strict=True):
        by.setdefault(c, []).append(d)
    groups = [(sum(v), len(v)) for v in by.values()]
    rng = random.Random(13)
    means = []
    for _ in range(draws):
        pick = [groups[rng.randrange(len(groups))] for _ in groups]
        means.append(sum(s for s, _ in pick) / sum(n for _, n in pick))
    means.sort()
    return means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


def grid_rules() -> list[ResyncConfig]:
    """The tuning grid around the session-12 rule (its first entry); several resume points share the
    budget level by level (each to its end, the first one takes it all)."""
    rules = [ResyncConfig(**S12)]
    resumes = ((0, 1), (1, 2, 3), (0, 1, 2, 3), tuple(range(6)), tuple(range(8)))
    shapes = [((1,), False), ((1,), True), *((r, True) for r in resumes)]
    grid = itertools.product(shapes, (8, 16, 32), (1, 2, 4, 8, 16), (8, 16, 32))
    for (resume, levels), patience, hold, nodes in grid:
        rules.append(ResyncConfig(nodes=nodes, patience=patience, resume=resume, hold=hold, levels=levels))
    return rules


def run_grid(rows: list[tuple[str, dict[str, Any]]], method: str) -> list[dict[str, Any]]:
    """Every grid rule's mean kept and lookup tokens per sample, best first; ``budgeted``: it sends no
    more lookup tokens per sample than the session-12 rule."""
    out: list[dict[str, Any]] = []
    for config in grid_rules():
        s = score(rows, method, config)
        out.append({"rule": describe(config), "kept": s.mean, "nodes": sum(s.nodes) / len(s.nodes)})
    s12 = out[0]["nodes"]
    return sorted(({**r, "budgeted": r["nodes"] <= s12} for r in out), key=lambda r: -r["kept"])


def run_compare(
    rows: list[tuple[str, dict[str, Any]]], methods: list[str], rules: list[tuple[str, ResyncConfig]]
) -> list[dict[str, Any]]:
    out = []
    for method in methods:
        base = score(rows, method, rules[0][1])
        for name, config in rules:
            s = score(rows, method, config)
            diffs = [a - b for a, b in zip(s.kept, base.kept, strict=True)]
            lo, hi = bootstrap(diffs, s.prompts)
            out.append({
                "method": method, "rule": name, "config": describe(config), "samples": len(s.kept),
                "kept": s.mean, "fraction": s.mean / HORIZON, "vs": rules[0][0],
                "diff": sum(diffs) / len(diffs), "ci95": [lo, hi],
                "better": sum(d > 0 for d in diffs), "worse": sum(d < 0 for d in diffs),
                "nodes_per_sample": sum(s.nodes) / len(s.nodes), "per_sample": list(s.kept),
            })
    return out


def method_gaps(records: list[dict[str, Any]], clusters: tuple[tuple[str, int], ...]) -> list[dict[str, Any]]:
    """Per rule: the first method minus each other one, paired per sample, with the bootstrap interval."""
    first = records[0]["method"]
    out = []
    for r in records:
        lead = next(x for x in records if x["method"] == first and x["rule"] == r["rule"])
        if r["method"] == first:
            continue
        diffs = [a - b for a, b in zip(lead["per_sample"], r["per_sample"], strict=True)]
        lo, hi = bootstrap(diffs, clusters)
        out.append({"rule": r["rule"], "gap": f"{first} - {r['method']}", "diff": sum(diffs) / len(diffs),
                    "ci95": [lo, hi], "ahead": sum(d > 0 for d in diffs), "behind": sum(d < 0 for d in diffs)})
    return out


def compare_table(records: list[dict[str, Any]]) -> str:
    head = "| method | rule | n | re-sync@32 (% of 32) | vs first, paired [95 % CI] | better / worse | lookup nodes |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in records:
        lo, hi = r["ci95"]
        lines.append(
            f"| {r['method']} | {r['rule']} | {r['samples']} | {r['kept']:.2f} ({100 * r['fraction']:.1f} %) | "
            f"{r['diff']:+.2f} [{lo:+.2f}, {hi:+.2f}] | {r['better']} / {r['worse']} | {r['nodes_per_sample']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("mode", choices=("grid", "compare"))
    p.add_argument("files", nargs="+", type=Path)
    p.add_argument("--method", default="moa")
    p.add_argument("--rule", action="append", default=[], help="compare: name=key=value,... (the first: the baseline)")
    p.add_argument("--top", type=int, default=40, help="grid: rows printed")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    rows = load_rows(args.files)
    if args.mode == "grid":
        result: Any = run_grid(rows, args.method)
        for title, rows_ in (("all", result), ("budgeted", [r for r in result if r["budgeted"]])):
            print(f"-- {title}, best {args.top}:")
            print("\n".join(f"{r['kept']:.3f}  nodes {r['nodes']:6.1f}  {r['rule']}" for r in rows_[: args.top]))
    else:
        records = run_compare(rows, args.method.split(","), [parse_rule(r) for r in args.rule])
        gaps = method_gaps(records, tuple((f, row["prompt"]) for f, row in rows))
        result = {"rules": records, "method_gaps": gaps}
        print(compare_table(records))
        for g in gaps:
            lo, hi = g["ci95"]
            counts = f"ahead {g['ahead']} / behind {g['behind']}"
            print(f"{g['rule']}: {g['gap']} {g['diff']:+.2f} [{lo:+.2f}, {hi:+.2f}], {counts}")
    if args.json:
        args.json.write_text(json.dumps({"files": [str(f) for f in args.files], "mode": args.mode, "result": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
