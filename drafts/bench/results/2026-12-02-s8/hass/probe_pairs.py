"""Top-1 agreement of the HASS on/off drafts with the target on held-out exact-target conversations,
paired by conversation: the bench's 12 prompts give a noisy tau, this gives thousands of positions.

Per draft and depth, the training pass's top-1 agreement (session 7's depth_probe.py: ``train d=k``,
every query reading target state up to i - k; EAGLE: its teacher-forced pass, depth 1 only) is
counted per conversation; then for each pair (a, b) the pooled difference (over positions) with a
paired bootstrap standard error (conversations resampled, 2,000 times, seed 0), and the mean of the
per-conversation differences with its standard error (sd / sqrt(n)). ``--rescore`` recomputes the
pairs of a written JSON.

    taskset -c 0 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python3 probe_pairs.py \
        --draft moa-on=runs/s8-hass-moa-on ... --data FILE --skip 0 --limit 40 --json OUT.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import torch

from drafts.neural.checkpoint import load_draft
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.training.data import load_training_conversations
from drafts.training.tokenize import tokenize_conversation

DEPTH_PROBE = Path(__file__).resolve().parents[2] / "2026-12-02-s7" / "official" / "depth_probe.py"
PAIRS = (
    ("moa-on", "moa-off"),
    ("eagle-on", "eagle-off"),
    ("moa-on", "moa"),
    ("moa-off", "moa"),
    ("eagle-on", "eagle"),
    ("eagle-off", "eagle"),
)


def load_depth_probe() -> Any:
    spec = importlib.util.spec_from_file_location("depth_probe", DEPTH_PROBE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["depth_probe"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def counts(
    dp: Any, model: Any, items: list[Any], depths: list[int], topk: list[int]
) -> dict[str, list[tuple[int, int]]]:
    """Per depth (and k > 1: "d=D top-K", the target's argmax among the draft's K best), (agreeing
    positions, positions) of every conversation."""
    out: dict[str, list[tuple[int, int]]] = {}
    for item in items:
        for d in depths if model.kind == "moa" else [1]:
            for k, hits in topk_hits(dp, model, item, d, topk).items():
                out.setdefault(f"d={d}" if k == 1 else f"d={d} top-{k}", []).append((sum(hits), len(hits)))
    return out


@torch.no_grad()
def topk_hits(dp: Any, model: Any, item: Any, depth: int, topk: list[int]) -> dict[int, list[bool]]:
    """depth_probe.train_accuracy, widened: for each k, is the target's argmax among the draft's top k?"""
    if topk == [1]:
        return {1: dp.train_accuracy(model, item, depth)}
    T = len(item.seq.ids)
    starts = (torch.arange(T) - depth).clamp_min(0)[None]
    saved = dp.moa_model.verification_starts, dp.eagle_model.NOISE
    dp.moa_model.verification_starts = lambda mask, periods, depth0=False: starts
    dp.eagle_model.NOISE = 0.0
    try:
        pred = model.predict(item.batch, 1.0, torch.Generator().manual_seed(0))[0]  # (T, H)
    finally:
        dp.moa_model.verification_starts, dp.eagle_model.NOISE = saved
    ranked = model.parts.to_target_ids(model.parts.logits(pred).topk(max(topk), dim=-1).indices)  # (T, K)
    keep = item.seq.loss_mask.clone()
    keep[:depth] = False
    found = ranked == item.top[:, None]
    return {k: found[:, :k].any(-1)[keep].tolist() for k in topk}


def pooled_diff(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> float:
    return sum(h for h, _ in a) / sum(n for _, n in a) - sum(h for h, _ in b) / sum(n for _, n in b)


def bootstrap_se(a: list[tuple[int, int]], b: list[tuple[int, int]], repeats: int = 2000) -> float:
    rng = random.Random(0)
    diffs = []
    for _ in range(repeats):
        pick = [rng.randrange(len(a)) for _ in a]
        diffs.append(pooled_diff([a[i] for i in pick], [b[i] for i in pick]))
    mean = sum(diffs) / repeats
    return math.sqrt(sum((d - mean) ** 2 for d in diffs) / (repeats - 1))


def paired(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> dict[str, float]:
    pooled = pooled_diff(a, b)
    d = [ha / na - hb / nb for (ha, na), (hb, nb) in zip(a, b, strict=True) if na]
    mean = sum(d) / len(d)
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
    return {
        "pooled": pooled,
        "pooled_se": bootstrap_se(a, b),
        "mean": mean,
        "se": se,
        "a_wins": sum(x > 0 for x in d),
        "n": len(d),
    }


def measure(args: argparse.Namespace) -> dict[str, dict[str, list[tuple[int, int]]]]:
    torch.set_num_threads(1)
    dp = load_depth_probe()
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    convs = load_training_conversations(args.data)[args.skip : args.skip + args.limit]
    seqs = [s for c in convs if (s := tokenize_conversation(runner.tokenizer, c, args.max_len)) is not None]
    items = [dp.probed(runner, seq) for seq in seqs]
    depths = [int(d) for d in args.depths.split(",")]
    topk = [int(k) for k in args.topk.split(",")]
    per: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for spec in args.draft:
        name, _, path = spec.partition("=")
        per[name] = counts(dp, load_draft(Path(path), runner).eval(), items, depths, topk)
        print(name, json.dumps(top1(per[name])), flush=True)
    return per


def top1(rows: dict[str, list[tuple[int, int]]]) -> dict[str, float]:
    return {k: sum(h for h, _ in v) / sum(n for _, n in v) for k, v in rows.items()}


def table(per: dict[str, dict[str, list[tuple[int, int]]]], pairs: dict[str, dict[str, Any]]) -> str:
    depths = sorted({k for rows in per.values() for k in rows})
    lines = [
        "| draft | " + " | ".join(d if "top-" in d else f"{d} top-1" for d in depths) + " | positions |",
        "|---" * (len(depths) + 2) + "|",
    ]
    for name, rows in per.items():
        cells = [f"{top1(rows)[d]:.4f}" if d in rows else "" for d in depths]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {sum(n for _, n in rows['d=1']):,} |")
    lines += [
        "",
        "| a - b | depth | pooled diff +- bootstrap SE | t | per-conversation diff +- SE | a > b |",
        "|---" * 6 + "|",
    ]
    for name, by_depth in pairs.items():
        for d, r in by_depth.items():
            t = r["pooled"] / r["pooled_se"] if r["pooled_se"] else float("nan")
            lines.append(
                f"| {name} | {d} | {r['pooled']:+.4f} +- {r['pooled_se']:.4f} | {t:+.1f} | "
                f"{r['mean']:+.4f} +- {r['se']:.4f} | {r['a_wins']}/{r['n']} |"
            )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--draft", action="append", default=[], metavar="NAME=DIR")
    p.add_argument("--data", default=None)
    p.add_argument("--skip", type=int, default=0)
    p.add_argument("--limit", type=int, default=40)
    p.add_argument("--max-len", type=int, default=320)
    p.add_argument("--depths", default="1,2,4")
    p.add_argument("--topk", default="1", help="K values: also count the target's argmax among the draft's K best")
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--rescore", action="store_true", help="recompute the pairs of --json (no model runs)")
    args = p.parse_args()
    if args.rescore:
        written = json.loads(args.json.read_text())
        meta, conversations = written["args"], written["conversations"]
        per = {n: {k: [(h, c) for h, c in v] for k, v in rows.items()} for n, rows in written["per_draft"].items()}
    else:
        meta, per = {k: str(v) for k, v in vars(args).items()}, measure(args)
        conversations = len(next(iter(per.values()))["d=1"])
    pairs = {
        f"{a} - {b}": {k: paired(per[a][k], per[b][k]) for k in per[a] if k in per[b]}
        for a, b in PAIRS
        if a in per and b in per
    }
    print(table(per, pairs), flush=True)
    args.json.write_text(
        json.dumps({"args": meta, "conversations": conversations, "per_draft": per, "pairs": pairs}, indent=1)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
