"""Session 12: where a speculative round's CPU time goes (packed target, the session-11 MoA), part by part.

At each prompt's real context (the prompt prefilled, its last token the root) every part is timed alone in this
thread's CPU time (``time.thread_time``: time spent waiting for a shared core is not counted), the parts taking
turns, ``--reps`` times after a warm-up pass; medians over prompts x reps:

    step           ar's whole step: the target over one token (last position's logits) and its commit
    forward N      the target over N positions (1; chain 4 = 5; tree 3,4,8 = 9; tree 4,4,16 = 17: the draft's
                   own trees at that root) with the MoA's activation request, all N rows of logits
    body N / head N  the same forward without the LM head (``logits_to_keep`` = 1) and the head over N rows
    mask N         the tree's position ids and attention mask (``TargetRunner._positions_and_mask``)
    accept N       greedy tree acceptance over the N rows of logits
    commit N       the commit of the accepted path (cache compaction, the MoA's all-layer K/V of the kept rows)
    observe        the draft taking the accepted tokens (its self-attention cache, LSA compression)
    draft SHAPE    ``NeuralDrafter.propose``: per shape, and per drafted node
    verify SHAPE   the speculative loop's own ``verify`` (forward, acceptance, commit, observe)

``--compare-linear`` times every part twice per pass, the target's packed Linear layers running the session-12
product (dense rows into oneDNN's product with the packed weight) or the one before it (the rows converted to
oneDNN's layout and back on every call, :func:`converting_forward`), the two taking turns: the same numbers, bit
for bit, in less time.

    taskset -c 0 env HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 python \
        drafts/bench/results/2026-12-02-s12/cpu-speed/round_parts.py --checkpoint runs/s12-cpu/moa-int8 \
        --compare-linear --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from drafts.acceptance import accept_tree
from drafts.bench.cli import fitting_prompts
from drafts.bench.environment import run_environment
from drafts.bench.report import write_json
from drafts.data.prompts import load_prompts
from drafts.decoding.config import DecodeConfig
from drafts.decoding.speculative import verify
from drafts.drafters.base import DraftShape
from drafts.neural.checkpoint import load_draft
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from drafts.target.loading import load_target
from drafts.target.packed_linear import PackedLinear
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree

GREEDY = SamplingConfig()
SHAPES = {"chain2": "2", "chain4": "4", "tree3,4,8": "3,4,8", "tree4,4,16": "4,4,16"}
SIZES = {1: None, 5: "chain4", 9: "tree3,4,8", 17: "tree4,4,16"}  # positions verified -> the shape drafted


def converting_forward(self: PackedLinear, x: torch.Tensor) -> torch.Tensor:
    """``PackedLinear.forward`` before session 12: rows converted to oneDNN's layout, the product converted back."""
    rows = x.reshape(-1, self.in_features).contiguous().to_mkldnn()  # (N, in)
    y = torch._C._nn.mkldnn_linear(rows, self.packed_weight, self.packed_bias).to_dense()  # (N, out)
    return y.reshape(*x.shape[:-1], self.out_features)


LINEAR = {"after": PackedLinear.forward, "before": converting_forward}


def shape_of(text: str) -> DraftShape:
    return DraftShape.parse_tree(text) if "," in text else DraftShape(gamma=int(text))


def cpu_ms(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.thread_time()
    out = work()
    return 1e3 * (time.thread_time() - started), out


def prefilled(runner: TargetRunner, drafter: NeuralDrafter, prompt: list[int]) -> TargetSession:
    """A session holding ``prompt`` but its last token (the root), the draft having observed the same."""
    session = runner.new_session()
    drafter.begin(prompt)
    runner.extend(session, prompt[:-1], drafter.needs)
    drafter.observe(prompt[:-1], runner.commit(session, None, drafter.needs), prompt[-1])
    return session


class Parts:
    """The timings of one prompt's parts, cut back to the prompt after each."""

    def __init__(self, runner: TargetRunner, drafter: NeuralDrafter, prompt: list[int]) -> None:
        self.runner, self.drafter, self.prompt = runner, drafter, prompt
        self.session = prefilled(runner, drafter, prompt)
        self.held = self.session.length
        self.trees = {name: drafter.propose(prompt, shape_of(s), GREEDY, None) for name, s in SHAPES.items()}

    def rewind(self) -> None:
        self.session.truncate(self.held)
        self.drafter.truncate(self.held)

    def tree(self, size: int) -> DraftTree:
        name = SIZES[size]
        return DraftTree((), ()) if name is None else self.trees[name]

    def step(self) -> float:
        def work() -> None:
            self.runner.extend(self.session, [self.prompt[-1]], last_only=True)
            self.runner.commit(self.session)

        spent, _ = cpu_ms(work)
        self.rewind()
        return spent

    def forward(self, size: int, last_only: bool) -> tuple[float, torch.Tensor]:
        tree = self.tree(size)
        ids = tree.input_ids(self.prompt[-1])
        spent, logits = cpu_ms(lambda: self.runner.extend(self.session, ids, self.drafter.needs, tree, last_only))
        self.session.pending = 0
        self.rewind()
        return spent, logits

    def head(self, size: int) -> float:
        hidden = torch.randn(1, size, self.runner.config.hidden_size)
        head = self.runner.model.get_output_embeddings()
        with torch.inference_mode():
            spent, _ = cpu_ms(lambda: head(hidden).float())
        return spent

    def mask(self, size: int) -> float:
        tree = self.tree(size)
        if tree.is_chain:
            return 0.0
        _tree_layout_clear()
        spent, _ = cpu_ms(lambda: self.runner._positions_and_mask(self.held, size, tree))
        return spent

    def accept_commit_observe(self, size: int) -> tuple[float, float, float]:
        tree = self.tree(size)
        logits = self.runner.extend(self.session, tree.input_ids(self.prompt[-1]), self.drafter.needs, tree)
        accept, acc = cpu_ms(lambda: accept_tree(tree, logits, GREEDY))
        keep = [0, *acc.path]
        commit, acts = cpu_ms(lambda: self.runner.commit(self.session, keep, self.drafter.needs))
        committed = [self.prompt[-1], *(tree.tokens[i - 1] for i in acc.path)]
        observe, _ = cpu_ms(lambda: self.drafter.observe(committed, acts, acc.next_token))
        self.rewind()
        return accept, commit, observe

    def draft(self, name: str) -> float:
        spent, _ = cpu_ms(lambda: self.drafter.propose(self.prompt, shape_of(SHAPES[name]), GREEDY, None))
        return spent

    def verify(self, name: str) -> float:
        decode = DecodeConfig(1, GREEDY, shape_of(SHAPES[name]))
        tree = self.trees[name]
        spent, _ = cpu_ms(
            lambda: verify(self.runner, self.drafter, self.session, self.prompt[-1], tree, decode, torch.Generator())
        )
        self.rewind()
        return spent


def _tree_layout_clear() -> None:
    """The mask's layout is cached per tree shape: time building it, as a new shape does."""
    from drafts.target import runner as module

    module._tree_layout.cache_clear()


def measure(parts: Parts, out: dict[str, list[float]], rounds_only: bool = False) -> None:
    """Every part once (with ``rounds_only`` only the step and each shape's draft and verify), appended to ``out``."""
    out.setdefault("step", []).append(parts.step())
    for size in () if rounds_only else SIZES:
        out.setdefault(f"forward {size}", []).append(parts.forward(size, last_only=False)[0])
        out.setdefault(f"body {size}", []).append(parts.forward(size, last_only=True)[0])
        out.setdefault(f"head {size}", []).append(parts.head(size))
        out.setdefault(f"mask {size}", []).append(parts.mask(size))
        accept, commit, observe = parts.accept_commit_observe(size)
        out.setdefault(f"accept {size}", []).append(accept)
        out.setdefault(f"commit {size}", []).append(commit)
        out.setdefault(f"observe {size}", []).append(observe)
    for name, tree in parts.trees.items():
        out.setdefault(f"draft {name}", []).append(parts.draft(name))
        out.setdefault(f"verify {name}", []).append(parts.verify(name))
        out.setdefault(f"nodes {name}", []).append(float(tree.size))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", type=Path, required=True, help="the MoA draft (fp32, or derived with --int8)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--compare-linear", action="store_true", help="also time the packed layers as before session 12")
    p.add_argument("--shapes", nargs="*", default=[], help="more shapes to draft and verify (chain G, tree D,K,T)")
    p.add_argument("--rounds-only", action="store_true", help="time only the step and the shapes' rounds")
    p.add_argument("--taus", type=Path, help="a cpu_speed.py run: each shape's tau there gives a modelled speedup")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    SHAPES.update({f"tree{s}" if "," in s else f"chain{s}": s for s in args.shapes})
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32, linear="packed"))
    drafter = NeuralDrafter(load_draft(args.checkpoint, runner))
    prompts, _ = fitting_prompts(runner, load_prompts("sharegpt-heldout"), args.limit, 96)
    variants = list(LINEAR) if args.compare_linear else ["after"]
    timings: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    for i, prompt in enumerate(prompts):
        parts = Parts(runner, drafter, prompt)
        for rep in range(args.reps + 1):  # the first pass warms up and is not counted
            for variant in variants[rep % len(variants) :] + variants[: rep % len(variants)]:
                PackedLinear.forward = LINEAR[variant]  # type: ignore[method-assign]
                measure(parts, timings[variant] if rep else {}, args.rounds_only)
        print(f"prompt {i}: {len(prompt)} tokens", file=sys.stderr)
    PackedLinear.forward = LINEAR["after"]  # type: ignore[method-assign]
    tables = {variant: summary(timings[variant]) for variant in variants}
    for name in tables["after"]:
        print(
            f"{name:>26}: "
            + "  ".join(f"{v} {t[name]['ms']:7.2f} ms {t[name]['x_step']:.3f} steps" for v, t in tables.items())
        )
    config = {"checkpoint": str(args.checkpoint), "prompts": len(prompts), "reps": args.reps, "linear": "packed"}
    modelled = modelled_speedups(tables["after"], json.loads(args.taus.read_text())) if args.taus else {}
    for name, row in modelled.items():
        print(
            f"{name:>14}: tau {row['tau']:.3f}, round {row['round_x_step']:.3f} steps, modelled {row['speedup']:.3f}x"
        )
    out = {"config": config | run_environment(runner), "medians": tables, "modelled": modelled, "timings": timings}
    write_json(args.json, out)
    return 0


def modelled_speedups(table: dict[str, dict[str, float]], run: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per shape of the int8 draft in ``run`` (``moa-int8-NAME``): tau x step / (draft + verify), all in CPU time."""
    out = {}
    for name in SHAPES:
        method = run["methods"].get(f"moa-int8-{name}")
        if method is None:
            continue
        round_x_step = table[f"draft {name}"]["x_step"] + table[f"verify {name}"]["x_step"]
        out[name] = {"tau": method["tau"], "round_x_step": round_x_step, "speedup": method["tau"] / round_x_step}
    return out


def summary(timings: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Median ms of every part, and in ar steps (the same variant's); the draft per drafted node too."""
    medians = {name: statistics.median(values) for name, values in timings.items()}
    for name in SHAPES:
        medians[f"draft {name} per node"] = medians[f"draft {name}"] / medians[f"nodes {name}"]
    step = medians["step"]
    return {name: {"ms": ms, "x_step": ms / step} for name, ms in medians.items() if not name.startswith("nodes")}


if __name__ == "__main__":
    sys.exit(main())
