"""Session 25: the target's grouped attention (``drafts/target/grouped_attention.py``) against transformers' sdpa,
interleaved in one process, as ``../packed-layout/layout_ab.py`` (its forwards and context).

Two SmolLM2-135M targets loaded packed, one put back on transformers' ``sdpa``; each after the same 300-token
prefill; each rep times one forward of 1 token, a 5-token chain, the 9-node tree 3,4,8 and a 17-node tree in thread
CPU time, the two taking turns. Medians in ms, and whether the logits are equal bit for bit.

    taskset -c 1 env HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python3 \
        drafts/bench/results/2026-12-04-s25/grouped-attention/attention_ab.py --json OUT.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packed-layout"))
from layout_ab import TREES, interleaved, medians, write_json  # noqa: E402  (this session's layout A/B, from its folder)

from drafts.target.loading import load_target  # noqa: E402
from drafts.target.runner import TargetRunner  # noqa: E402

KEYS = ("grouped", "sdpa")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    runners = {key: TargetRunner(load_target(None, torch.device("cpu"), torch.float32, "packed")) for key in KEYS}
    runners["sdpa"].model.set_attn_implementation("sdpa")
    ms, equal = interleaved(runners, list(TREES), args.reps, lambda o: torch.equal(o["grouped"], o["sdpa"]))
    table = medians(ms, equal, "bits_equal")
    print("| forward | transformers' sdpa ms | grouped ms | grouped / sdpa | logits equal bit for bit |")
    print("|---|---|---|---|---|")
    for part, row in table.items():
        print(
            f"| {part} | {row['sdpa']:.1f} | {row['grouped']:.1f} | {row['grouped'] / row['sdpa']:.3f} "
            f"| {row['bits_equal']} |"
        )
    write_json(args.json, args.reps, table, ms)


if __name__ == "__main__":
    main()
