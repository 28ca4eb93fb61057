"""Depth probe: is MoA's depth-1 loss to EAGLE a train/inference mismatch, or the model?

For conversations the shipped drafts never trained on (``runs/s7_answers.jsonl`` lines 306+),
measures top-1 agreement with the target (draft argmax mapped to target ids == the target's
full-vocabulary argmax) on response positions:

- ``train d=k``: MoA's *parallel training computation* with every query reading target state up
  to ``i - k`` (``starts = i - k``; no staircase): what the loss sees at depth k;
- ``infer d=1``: the real inference path, one token at a time: the target commits x_0..x_{p-1}
  (their activations through the runner, as in decoding), the draft steps from root x_p;
- EAGLE: ``train d=1`` (noise off: its teacher-forced pass) and ``infer d=1`` the same way.

    taskset -c 0 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python3 \
        drafts/bench/results/2026-12-02-s7/official/depth_probe.py --moa DIR --eagle DIR --limit 12
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from drafts.eagle import model as eagle_model
from drafts.moa import model as moa_model
from drafts.moa.model import MoADraft
from drafts.neural.base import NeuralDraft, TrainBatch
from drafts.neural.checkpoint import load_draft
from drafts.target.activations import ActivationRequest
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.training.data import load_training_conversations
from drafts.training.tokenize import Sequence, tokenize_conversation

SHIPPED = Path("drafts/checkpoints/smollm2-135m-instruct")


def activations(runner: TargetRunner, ids: list[int], request: ActivationRequest) -> tuple[torch.Tensor, Any]:
    """Target logits (T, V) and activations of the whole sequence (one pass)."""
    session = runner.new_session()
    logits = runner.extend(session, ids, request)
    return logits, runner.commit(session, None, request)


@dataclass(frozen=True)
class Probed:
    """One held-out sequence with the target's activations (computed once, shared by every draft)."""

    seq: Sequence
    batch: TrainBatch  # ids, loss mask, final hidden, all-layer K/V
    top: torch.Tensor  # (T,) the target's full-vocabulary argmax


def probed(runner: TargetRunner, seq: Sequence) -> Probed:
    request = ActivationRequest(hidden_layers=(runner.num_layers,), all_layer_kv=True)
    logits, acts = activations(runner, seq.ids.tolist(), request)
    hidden = acts.hidden[runner.num_layers][None].float()
    assert acts.kv is not None
    batch = TrainBatch(seq.ids[None], seq.loss_mask[None], hidden, acts.kv[None].float())
    return Probed(seq, batch, logits.argmax(-1))


@torch.no_grad()
def train_accuracy(model: NeuralDraft, item: Probed, depth: int) -> list[bool]:
    """Agreement at response positions of the parallel pass with starts = i - depth (``depth`` 0:
    every query reads the first token's target state only, i.e. no target state of the context)."""
    T = len(item.seq.ids)
    # depth 0: no memory past the first token (starts all 0), every response position scored
    starts = (torch.arange(T) - depth).clamp_min(0)[None] if depth else torch.zeros(1, T, dtype=torch.long)
    saved = moa_model.verification_starts, eagle_model.NOISE
    moa_model.verification_starts = lambda mask, periods, depth0=False: starts  # type: ignore[assignment]
    eagle_model.NOISE = 0.0
    try:
        pred = model.predict(item.batch, 1.0, torch.Generator().manual_seed(0))[0]  # (T, H)
    finally:
        moa_model.verification_starts, eagle_model.NOISE = saved
    draft_top = model.parts.to_target_ids(model.parts.logits(pred).argmax(-1))
    keep = item.seq.loss_mask.clone()
    keep[:depth] = False
    return (draft_top == item.top)[keep].tolist()


@torch.no_grad()
def infer_accuracy(model: NeuralDraft, runner: TargetRunner, seq: Sequence, target_top: torch.Tensor) -> list[bool]:
    """Depth-1 agreement through observe/step, committing one token at a time as decoding does."""
    ids = seq.ids.tolist()
    first = int(seq.loss_mask.float().argmax())  # first response position
    model.reset()
    session = runner.new_session()
    runner.extend(session, ids[:first], model.needs)
    model.observe(ids[:first], 0, runner.commit(session, None, model.needs))
    out = []
    for p in range(first, len(ids)):
        logits, _ = model.step(torch.tensor([ids[p]]), torch.tensor([p]), None, model.initial_state())
        model.end_round()
        out.append(int(model.parts.to_target_ids(logits[0].argmax())) == int(target_top[p]))
        runner.extend(session, [ids[p]], model.needs)
        model.observe([ids[p]], p, runner.commit(session, None, model.needs))
    return out


def probe(
    model: NeuralDraft, runner: TargetRunner, items: list[Probed], depths: list[int], infer: bool
) -> dict[str, float]:
    rows: dict[str, list[bool]] = {}
    for item in items:
        if isinstance(model, MoADraft):  # the memory does not depend on the depth: compress once
            assert item.batch.target_kv is not None
            with torch.no_grad():
                memory = model.compress(item.batch.target_kv)
            model.compress = lambda kv, m=memory: m  # type: ignore[method-assign,misc]
        try:
            for d in depths if model.kind == "moa" else [1]:  # EAGLE's pass is teacher-forced: depth 1 only
                rows.setdefault(f"train d={d}", []).extend(train_accuracy(model, item, d))
        finally:
            model.__dict__.pop("compress", None)
        if infer:
            rows.setdefault("infer d=1", []).extend(infer_accuracy(model, runner, item.seq, item.top))
    return {k: sum(v) / len(v) for k, v in rows.items()} | {"positions": len(rows["train d=1"])}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument(
        "--draft",
        action="append",
        default=None,
        metavar="NAME=DIR",
        help="a checkpoint to probe (repeatable; default the shipped moa and eagle)",
    )
    p.add_argument("--data", default="runs/official-answers.jsonl")
    p.add_argument("--skip", type=int, default=305, help="conversations the shipped drafts trained on")
    p.add_argument("--limit", type=int, default=12)
    p.add_argument("--max-len", type=int, default=320)
    p.add_argument("--depths", default="1,2,3,4", help="0: no target state past the first token")
    p.add_argument("--no-infer", action="store_true", help="only the training pass (the inference path is slow)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    convs = load_training_conversations(args.data)[args.skip : args.skip + args.limit]
    seqs = [s for c in convs if (s := tokenize_conversation(runner.tokenizer, c, args.max_len)) is not None]
    items = [probed(runner, seq) for seq in seqs]
    drafts = args.draft or [f"moa={SHIPPED / 'moa'}", f"eagle={SHIPPED / 'eagle'}"]
    depths = [int(d) for d in args.depths.split(",")]
    results: dict[str, dict[str, float]] = {}
    for spec in drafts:
        name, _, path = spec.partition("=")
        model = load_draft(Path(path), runner).eval()
        results[name] = probe(model, runner, items, depths, not args.no_infer)
        print(name, json.dumps(results[name]), flush=True)
    if args.json:
        meta = {k: str(v) for k, v in vars(args).items()}
        args.json.write_text(json.dumps({"args": meta, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
