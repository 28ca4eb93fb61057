"""Session 12 (H1): a stream's proposals when they reach the server one or two steps late, simulated at T = 0.

As session 11's ``stream_hits.py`` simulated streams (the target's greedy answer S, the shipped MoA,
teacher-forced as the stream's proposer feeds it), but each step's proposal is the one drafted
below the root of the step ``--late`` steps before (1: the least lag possible, what lan has; 2:
4g with a verifier of its own, where the server takes ~60 ms a step against ~100 ms for the part's
way, the draft and the proposal's way back). Per step: the part of that proposal that applies (the
server's rule, drafts.proposal_match), the tokens greedy acceptance keeps. Timing-independent.

Proposals: ``fanWxD`` (W chains of D, drafts.neural.fan), ``fanWxD/L`` (led L levels: the W likeliest
paths of L tokens, a chain below each), ``chainD``.

    taskset -c 0 python3 drafts/bench/results/2026-12-02-s12/stream-lead/lead_sim.py --dataset humaneval \
        --limit 8 --json lead-sim-humaneval.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from drafts.data.prompts import load_prompts
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.locations import shipped_checkpoint
from drafts.neural.checkpoint import load_draft
from drafts.neural.drafter import NeuralDrafter
from drafts.proposal_match import applicable_subtree
from drafts.target.activations import Activations
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree

SHAPES = "fan4x4 fan4x5 fan4x5/2 fan8x5/2 fan4x6/3"


def simulated(drafter: NeuralDrafter, acts: Activations, seq: list[int], n_prompt: int, shape: str, late: int) -> Any:
    """One prompt's stream: per step the proposal drafted ``late`` steps before, what applied, what was kept."""
    drafter.begin(seq[:n_prompt])
    drafter.observe(seq[:n_prompt], acts.select(slice(0, n_prompt)))
    roots: list[int] = []  # each step's root index
    c, end = n_prompt, len(seq) - 1
    steps = applied = verified = accepted = 0
    draft_s = 0.0
    while c < end:
        a = 0
        if len(roots) >= late:
            base = roots[-late]  # the bases only grow: the draft takes in what came before each, once
            drafter.observe(seq[drafter.observed : base], acts.select(slice(drafter.observed, base)))
            t0 = time.perf_counter()
            tree = propose(drafter, seq[base], shape)
            draft_s += time.perf_counter() - t0
            kept = applicable_subtree(tree, base, seq[base : c + 1], base, 1 << 16)
            if kept is not None:
                applied, verified = applied + 1, verified + kept.size
                a = greedy_accepted(kept, seq[c + 1 :])
        steps, accepted = steps + 1, accepted + a
        roots.append(c)
        c += a + 1
    return {"shape": shape, "late": late, "steps": steps, "applied": applied, "verified": verified,
            "accepted": accepted, "draft_s": draft_s}  # fmt: skip


def propose(drafter: NeuralDrafter, root: int, shape: str) -> DraftTree:
    if shape.startswith("chain"):
        return drafter.fan(root, 1, int(shape.removeprefix("chain")))
    spec, _, lead = shape.removeprefix("fan").partition("/")
    width, depth = (int(x) for x in spec.split("x"))
    return drafter.fan(root, width, depth, int(lead or 1))


def greedy_accepted(tree: DraftTree, future: list[int]) -> int:
    node, a = 0, 0
    for token in future:
        node = next((ch for ch in tree.children(node) if tree.tokens[ch - 1] == token), -1)
        if node < 0:
            break
        a += 1
    return a


def summary(runs: list[dict[str, Any]], tokens: int) -> dict[str, float]:
    steps = sum(r["steps"] for r in runs)
    return {
        "tau": tokens / steps,
        "applied_share": sum(r["applied"] for r in runs) / steps,
        "accepted_per_step": sum(r["accepted"] for r in runs) / steps,
        "verified_per_step": sum(r["verified"] for r in runs) / steps,
        "draft_ms": 1e3 * sum(r["draft_s"] for r in runs) / steps,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="sharegpt-heldout")
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--late", default="1 2")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    drafter = NeuralDrafter(load_draft(shipped_checkpoint(runner.fingerprint.name, "moa"), runner))
    decode = DecodeConfig(max_new_tokens=args.max_new_tokens)
    prompts = [runner.format_chat(q.messages) for q in load_prompts(args.dataset, args.limit)]
    cases = [(shape, int(late)) for late in args.late.split() for shape in args.shapes.split()]
    runs: dict[str, list[dict[str, Any]]] = {f"{s} late {k}": [] for s, k in cases}
    tokens = 0
    with torch.inference_mode():
        for prompt in prompts:
            answer = generate_autoregressive(runner, prompt, decode).tokens
            seq, tokens = prompt + answer, tokens + len(answer)
            session = runner.new_session()
            runner.extend(session, seq, drafter.needs)
            acts = runner.commit(session, None, drafter.needs)
            for shape, late in cases:
                runs[f"{shape} late {late}"].append(simulated(drafter, acts, seq, len(prompt), shape, late))
            print(len(runs[f"{cases[0][0]} late {cases[0][1]}"]), "prompts", flush=True)
    table = {name: summary(r, tokens) for name, r in runs.items()}
    for name, row in table.items():
        print(f"{name:22s}", " ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
    args.json.write_text(json.dumps({"config": vars(args) | {"json": str(args.json)}, "summary": table,
                                     "runs": runs}, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
