"""Where a verify's time goes: extend of 1 / 5 (chain) / 17 (tree) tokens + commit, SmolLM2 fp32.

Run pinned to one core with one thread, e.g.
    OMP_NUM_THREADS=1 taskset -c 0 python3 drafts/bench/results/2026-12-01-s5/verify_cost/profile_verify.py
Cases are interleaved and repeated; medians are reported, wall and CPU (time.process_time).
``legacy`` (on transformers' concatenating ``DynamicCache``) is a frozen copy of the runner's
extend/commit before the verify-cost changes, so one run compares the old and the new paths
alternately, on the same cache states and the same inputs, and checks that both return identical
logits and leave identical caches.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import torch
from transformers import DynamicCache

from drafts.acceptance import accept_tree
from drafts.sampling import SamplingConfig
from drafts.target.activations import NOTHING
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree

GREEDY = SamplingConfig(temperature=0.0)
PARTS = ("extend", "accept", "commit", "total")


# -- the runner as it was (commit c67dc35), kept here only to compare against ------------------
def legacy_extend(
    runner: TargetRunner, session: TargetSession, tokens: list[int], tree: DraftTree | None
) -> torch.Tensor:
    n, start = len(tokens), session.length
    ids = torch.tensor([list(tokens)], device=runner.device)
    kwargs: dict[str, Any] = {"logits_to_keep": 0}
    if tree is not None and not tree.is_chain:
        depths = torch.tensor(tree.depths)
        positions = start + depths
        visible = torch.ones(n, start + n, dtype=torch.bool)
        visible[:, start:] = tree.ancestor_mask()
        kwargs["position_ids"], kwargs["attention_mask"] = positions[None], visible[None, None]
    with torch.inference_mode():
        out = runner.model(input_ids=ids, cache=session.cache, use_cache=True, **kwargs)
    session.pending = n
    return out.logits[0].float()


def legacy_commit(runner: TargetRunner, session: TargetSession, keep: list[int]) -> None:
    start = session.length
    if keep == list(range(len(keep))):
        session._crop_to(start + len(keep))
    else:
        index = torch.tensor(keep) + start
        for layer in session._layers():
            layer.keys = torch.cat([layer.keys[:, :, :start], layer.keys[:, :, index]], dim=2)
            layer.values = torch.cat([layer.values[:, :, :start], layer.values[:, :, index]], dim=2)
    session.length, session.pending = start + len(keep), 0


def new_extend(runner: TargetRunner, session: TargetSession, tokens: list[int], tree: DraftTree | None) -> torch.Tensor:
    return runner.extend(session, tokens, NOTHING, tree=tree)


def new_commit(runner: TargetRunner, session: TargetSession, keep: list[int]) -> None:
    runner.commit(session, keep, NOTHING)


# -- the cases ---------------------------------------------------------------------------------
def binary_tree(size: int) -> DraftTree:
    """A 16-node tree: two children per node, breadth first (depth 4), tokens from the vocab's middle."""
    parents = [(i // 2) for i in range(size)]  # node i+1's parent: 0,0,1,1,2,2,...
    return DraftTree(tuple(1000 + i for i in range(size)), tuple(parents))


def cases() -> dict[str, tuple[int, DraftTree | None, list[int]]]:
    """name -> (new tokens, tree or None, kept positions)."""
    tree = binary_tree(16)
    deep = max(range(tree.size + 1), key=lambda i: tree.depths[i])
    return {
        "1": (1, None, [0]),
        "5-chain": (5, DraftTree.chain([1000, 1001, 1002, 1003]), [0, 1, 2]),
        "17-tree": (17, tree, [0, *tree.path(deep)]),  # a non-prefix path: the compacting commit
    }


def run_once(
    runner: TargetRunner,
    session: TargetSession,
    base: int,
    case: tuple[int, DraftTree | None, list[int]],
    extend: Callable[..., torch.Tensor],
    commit: Callable[..., object],
    timers: dict[str, list[float]],
    key: str,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    n, tree, keep = case
    tokens = [200 + i for i in range(n)] if tree is None else tree.input_ids(200)
    session.truncate(base)
    w0, c0 = time.perf_counter(), time.process_time()
    logits = extend(runner, session, tokens, tree)
    w1, c1 = time.perf_counter(), time.process_time()
    if tree is not None:
        accept_tree(tree, logits, GREEDY)
    w2, c2 = time.perf_counter(), time.process_time()
    commit(runner, session, keep)
    w3, c3 = time.perf_counter(), time.process_time()
    for part, w, c in (("extend", w1 - w0, c1 - c0), ("accept", w2 - w1, c2 - c1), ("commit", w3 - w2, c3 - c2)):
        timers[f"{key}/{part}/wall"].append(w * 1e3)
        timers[f"{key}/{part}/cpu"].append(c * 1e3)
    timers[f"{key}/total/wall"].append((w3 - w0) * 1e3)
    timers[f"{key}/total/cpu"].append((c3 - c0) * 1e3)
    return logits, [t.clone() for layer in session._layers() for t in (layer.keys, layer.values)]


def head_and_mask_costs(runner: TargetRunner, base: int, reps: int) -> dict[str, float]:
    """Standalone medians (ms): the LM head over n rows and the tree mask construction."""
    hidden = torch.randn(17, runner.config.hidden_size)
    head = runner.model.get_output_embeddings()
    tree = binary_tree(16)
    out: dict[str, list[float]] = defaultdict(list)
    with torch.inference_mode():
        for _ in range(reps):
            for rows in (1, 5, 17):
                t0 = time.perf_counter()
                head(hidden[:rows])
                out[f"lm_head {rows} rows"].append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            runner._positions_and_mask(base, 17, tree)
            out["tree mask+positions (17)"].append((time.perf_counter() - t0) * 1e3)
    return {k: statistics.median(v) for k, v in out.items()}


def cpu_model() -> str:
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def print_table(med: dict[str, float]) -> None:
    print(f"{'case':9} {'path':4} | extend wall/cpu | accept wall/cpu | commit wall/cpu | total wall/cpu  | x1 (cpu)")
    for path in ("old", "new"):
        one = med[f"{path}/1/total/cpu"]
        for name in cases():
            row = {f"{part}/{kind}": med[f"{path}/{name}/{part}/{kind}"] for part in PARTS for kind in ("wall", "cpu")}
            cells = [f"{row[f'{part}/wall']:6.2f} / {row[f'{part}/cpu']:6.2f}" for part in PARTS]
            print(f"{name:9} {path:4} | " + " | ".join(cells) + f" | {row['total/cpu'] / one:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--context", type=int, default=200)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None, help="also write the medians here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    sessions = {"old": TargetSession(cache=DynamicCache()), "new": runner.new_session()}  # old: concatenating cache
    prompt = [(17 * i) % 40000 + 100 for i in range(args.context)]
    for s in sessions.values():
        runner.extend(s, prompt, NOTHING, last_only=True)
        runner.commit(s, None, NOTHING)
    paths = {"old": (legacy_extend, legacy_commit), "new": (new_extend, new_commit)}
    timers: dict[str, list[float]] = defaultdict(list)
    mismatches = 0
    for rep in range(args.reps + 3):  # 3 warm-up rounds, not recorded
        for name, case in cases().items():
            results = {}
            order = ("old", "new") if rep % 2 == 0 else ("new", "old")
            for path in order:
                extend, commit = paths[path]
                scratch: dict[str, list[float]] = defaultdict(list)
                key = f"{path}/{name}"
                results[path] = run_once(runner, sessions[path], args.context, case, extend, commit, scratch, key)
                if rep >= 3:
                    for k, v in scratch.items():
                        timers[k].extend(v)
            (lo, lk), (no, nk) = results["old"], results["new"]
            same = torch.equal(lo, no) and len(lk) == len(nk)
            same = same and all(torch.equal(a, b) for a, b in zip(lk, nk, strict=True))
            mismatches += not same
    med = {k: statistics.median(v) for k, v in timers.items()}
    report = {
        "cpu": cpu_model(),
        "threads": args.threads,
        "context": args.context,
        "reps": args.reps,
        "torch": torch.__version__,
        "identical_outputs": mismatches == 0,
        "mismatches": mismatches,
        "medians_ms": med,
        "standalone_ms": head_and_mask_costs(runner, args.context, args.reps),
    }
    print(f"CPU: {report['cpu']}  threads={args.threads}  context={args.context}  reps={args.reps}")
    print(f"old and new outputs identical (logits and caches, every rep): {mismatches == 0}")
    print_table(med)
    for k, v in report["standalone_ms"].items():
        print(f"standalone {k}: {v:.2f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
