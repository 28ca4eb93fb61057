"""Session 11 (H2): how often the draft's first guess is right, per round and per stream step, at T = 0.

For each prompt (the target's greedy answer S = prompt + answer, the shipped MoA draft, fp32, CPU):

    rounds      the round-based loop (drafts.decoding.speculative, chain ``--chain``): per round, whether
                its depth-1 token was accepted (moa-bench's per_position_acceptance["1"])
    forced      teacher-forced, as the stream's proposer feeds the draft: the prompt observed, then for
                every answer position p the draft has the vectors of S[:p] and the token S[p] (the root),
                one token observed per step (a part of one token); its top-k guesses for S[p + 1]
    forced@r    ``forced`` at the rounds' roots only: must equal ``rounds`` (same draft state, same root)
    stream      ``--stream``: speculative streaming (app.engine.stream_generation) against a moa-server
                in this process (loopback, ``--link`` shaped), the same chain; per server step, logged on
                the server (server_stub.proposals.ProposalBox.step_tree, wrapped): the base of the proposal
                the box held, the step's root index, the nodes that applied, and whether that proposal's
                first level held the token the server made after its base

Figures: the share of positions whose top-1 (top-k) is right, and the depth-1 accepted share of rounds;
``--json`` writes them with the per-position ranks. Counts do not depend on timing.

    taskset -c 0 python3 drafts/bench/results/2026-12-02-s11/stream-hits/stream_hits.py \
        --dataset sharegpt-heldout --limit 10 --max-new-tokens 64 --json OUT.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig, LinkConfig
from app.engine.events import Finished
from app.engine.sync import EngineThread
from drafts.data.prompts import load_prompts
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.generation import Generation
from drafts.decoding.speculative import speculative_rounds
from drafts.drafters.base import DraftShape
from drafts.locations import shipped_checkpoint
from drafts.net import ShaperThread, preset
from drafts.neural.checkpoint import draft_id, load_draft
from drafts.neural.drafter import NeuralDrafter
from drafts.proposal_match import applicable_subtree
from drafts.target.activations import Activations
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree
from server_stub.backend.draft_memory import MemoryCompressor
from server_stub.backend.transformers_backend import TransformersBackend
from server_stub.cli import backend_config
from server_stub.config import ServerConfig
from server_stub.proposals import ProposalBox
from server_stub.server import VerifierServer

TOP_KS = (1, 2, 3, 4, 8)
RANK_CAP = 64


def round_roots(runner: TargetRunner, drafter: NeuralDrafter, prompt: list[int], decode: DecodeConfig) -> list[Any]:
    """(root index, depth-1 accepted) per round of the round-based loop, and its output."""
    gen = Generation(prompt_len=len(prompt))
    out: list[tuple[int, bool]] = []
    for event in speculative_rounds(runner, drafter, prompt, decode, gen):
        if event.index > 0:
            root = len(prompt) + len(gen.tokens) - len(event.output) - 1
            out.append((root, len(event.accepted) > 0))
    return [out, gen.tokens]


def target_acts(runner: TargetRunner, drafter: NeuralDrafter, seq: list[int]) -> Activations:
    """What the draft reads of every token of ``seq`` (one target pass)."""
    session = runner.new_session()
    runner.extend(session, seq, drafter.needs)
    return runner.commit(session, None, drafter.needs)


def forced_ranks(drafter: NeuralDrafter, acts: Activations, seq: list[int], n_prompt: int) -> list[int]:
    """Per answer root p (n_prompt .. len(seq) - 2): the rank of seq[p + 1] in the draft's depth-1 logits."""
    drafter.begin(seq[:n_prompt])
    drafter.observe(seq[:n_prompt], acts.select(slice(0, n_prompt)))
    model, ranks = drafter.model, []
    for p in range(n_prompt, len(seq) - 1):
        logits, _ = model.step(torch.tensor([seq[p]]), torch.tensor([p]), None, model.initial_state())
        model.end_round()
        ranks.append(rank_of(model, logits[-1], seq[p + 1]))
        drafter.observe([seq[p]], acts.select(slice(p, p + 1)))
    return ranks


STEPS: list[dict[str, Any]] = []  # the server's steps of the running stream, as logged
_step_tree = ProposalBox.step_tree


def logged_step_tree(self: ProposalBox, tokens: Sequence[int], start: int, limit: int, max_depth: int) -> DraftTree:
    """ProposalBox.step_tree, logging what the box held and what of it applied."""
    kept = _step_tree(self, tokens, start, limit, max_depth)
    row: dict[str, Any] = {"root": start + len(tokens) - 1, "applied": kept.size, "at": time.perf_counter()}
    if self.newest is not None:
        tree, base = self.newest.tree, self.newest.base
        row |= {"base": base, "nodes": tree.size, "first_level": [tree.tokens[i - 1] for i in tree.children(0)]}
        row["next_after_base"] = tokens[base - start + 1] if start <= base < start + len(tokens) - 1 else None
    STEPS.append(row)
    return kept


@contextmanager
def loopback_server(runner: TargetRunner, checkpoint: Path) -> Iterator[int]:
    """A moa-server over ``runner`` on its own loop in a thread; yields its port."""
    config = ServerConfig(port=0)
    backend = TransformersBackend(runner, backend_config(config), MemoryCompressor.load(checkpoint, runner))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = VerifierServer(config, backend)
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(60)
    try:
        yield server.port
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def stream_steps(engine: EngineThread, prompt: list[int], decode: DecodeConfig) -> dict[str, Any]:
    """One cold-start stream: its tokens, its proposal figures (the client's tally) and the server's steps."""
    engine.forget()
    STEPS.clear()
    finished = engine.generate(prompt, decode)
    assert isinstance(finished, Finished)
    proposals = finished.stats.proposals
    return {
        "tokens": list(finished.tokens),
        "tally": None if proposals is None else proposals.to_json(),
        "steps": list(STEPS),
    }


def rank_of(model: Any, logits: torch.Tensor, token: int) -> int:
    """Where ``token`` (a target id) stands in the draft's (Dv,) ``logits``: 0 its top-1, RANK_CAP if far down."""
    ids = model.parts.to_target_ids(logits.topk(RANK_CAP).indices).tolist()
    return ids.index(token) if token in ids else RANK_CAP


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="sharegpt-heldout")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--chain", type=int, default=4)
    parser.add_argument("--stream", action="store_true", help="also stream each prompt through a loopback moa-server")
    parser.add_argument("--link", default="lan", help="the shaper's profile for --stream (none: no shaper)")
    parser.add_argument("--width", type=int, default=1, help="--stream's EngineConfig.stream_width (1: one chain)")
    parser.add_argument("--shapes", default="chain4 fan2x4 fan4x4 fan8x4 4,4,16", help="simulated stream proposals")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    checkpoint = shipped_checkpoint(runner.fingerprint.name, "moa")
    drafter = NeuralDrafter(load_draft(checkpoint, runner))
    decode = DecodeConfig(max_new_tokens=args.max_new_tokens, shape=DraftShape(gamma=args.chain))
    prompts = [runner.format_chat(p.messages) for p in load_prompts(args.dataset, args.limit)]
    prompts = [p for p in prompts if len(p) + args.max_new_tokens <= runner.context_length]
    shapes = args.shapes.split()
    rows = [measure(runner, drafter, prompt, decode, shapes) for prompt in prompts]
    if args.stream:
        ProposalBox.step_tree = logged_step_tree  # type: ignore[method-assign]
        draft = ClientDraft.of(NeuralDrafter(load_draft(checkpoint, runner)), draft_id(checkpoint), runner)
        with loopback_server(runner, checkpoint) as port, shaped(port, args.link) as link_port:
            url = LinkConfig(f"ws://127.0.0.1:{link_port}")
            config = EngineConfig(url, gamma_min=args.chain, gamma_max=args.chain, stream=True, stream_width=args.width)
            with EngineThread(config, draft) as engine:
                engine.generate(prompts[0], DecodeConfig(max_new_tokens=4))  # warm up
                for row, prompt in zip(rows, prompts, strict=True):
                    row["stream"] = stream_steps(engine, prompt, decode)
                    row["stream"]["identical"] = row["stream"].pop("tokens") == row["answer"]
                    print(stream_summary([row], args.width), flush=True)
    result = {"config": vars(args) | {"json": str(args.json)}, "summary": summary(rows), "prompts": rows}
    result["simulated_summary"] = simulated_summary(rows, shapes)
    if args.stream:
        result["stream_summary"] = stream_summary(rows, args.width)
    print(json.dumps({k: v for k, v in result.items() if "summary" in k}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result) + "\n")


@contextmanager
def shaped(port: int, link: str) -> Iterator[int]:
    """The port to connect to: the server's, or a link shaper's in front of it."""
    if link == "none":
        yield port
        return
    with ShaperThread(upstream_port=port, profile=preset(link)) as shaper:
        yield shaper.port


def measure(
    runner: TargetRunner, drafter: NeuralDrafter, prompt: list[int], decode: DecodeConfig, shapes: list[str]
) -> dict[str, Any]:
    """The ar answer, the rounds' depth-1 hits, the teacher-forced ranks and the simulated streams of one prompt."""
    answer = generate_autoregressive(runner, prompt, decode).tokens
    rounds, spec = round_roots(runner, drafter, prompt, decode)
    assert spec == answer, "the round-based output differs from ar"
    seq = prompt + answer
    acts = target_acts(runner, drafter, seq)
    ranks = forced_ranks(drafter, acts, seq, len(prompt))
    simulated = [simulated_stream(drafter, acts, seq, len(prompt), shape) for shape in shapes]
    row = {"n_prompt": len(prompt), "answer": answer, "rounds": rounds, "ranks": ranks, "simulated": simulated}
    print(summary([row]), flush=True)
    return row


def simulated_stream(
    drafter: NeuralDrafter, acts: Activations, seq: list[int], n_prompt: int, shape: str
) -> dict[str, Any]:
    """The stream at T = 0 with every proposal exactly one step late (as measured: the server never
    waits, a step's proposal is the one drafted from the step before's root): per step, the draft
    below the previous root, the part of it that applies (the server's rule), the tokens accepted."""
    drafter.begin(seq[:n_prompt])
    drafter.observe(seq[:n_prompt], acts.select(slice(0, n_prompt)))
    c, previous, end = n_prompt, None, len(seq) - 1
    steps, applied, verified, accepted, draft_s = 0, 0, 0, 0, 0.0
    while c < end:
        steps += 1
        a = 0
        if previous is not None:
            drafter.observe(seq[drafter.observed : previous], acts.select(slice(drafter.observed, previous)))
            t0 = time.perf_counter()
            tree = propose(drafter, seq[previous], shape)
            draft_s += time.perf_counter() - t0
            kept = applicable_subtree(tree, previous, seq[previous : c + 1], previous, 1 << 16)
            if kept is not None:
                applied, verified = applied + 1, verified + kept.size
                a = greedy_accepted(kept, seq[c + 1 :])
        accepted += a
        previous, c = c, c + a + 1
    return {
        "shape": shape,
        "steps": steps,
        "applied": applied,
        "verified": verified,
        "accepted": accepted,
        "draft_s": draft_s,
    }


def propose(drafter: NeuralDrafter, root: int, shape: str) -> DraftTree:
    """``chainG``, ``fanKxD`` (K chains of D) or a tree ``DEPTH,TOPK,TOTAL``, below ``root``."""
    if shape.startswith("chain"):
        return drafter.fan(root, 1, int(shape.removeprefix("chain")))
    if shape.startswith("fan"):
        width, depth = (int(x) for x in shape.removeprefix("fan").split("x"))
        return drafter.fan(root, width, depth)
    return drafter.tree(root, DraftShape.parse_tree(shape))


def greedy_accepted(tree: DraftTree, future: list[int]) -> int:
    """Nodes of ``tree`` greedy acceptance keeps when the target's tokens are ``future``."""
    node, a = 0, 0
    for token in future:
        node = next((ch for ch in tree.children(node) if tree.tokens[ch - 1] == token), -1)
        if node < 0:
            break
        a += 1
    return a


def simulated_summary(rows: list[dict[str, Any]], shapes: list[str]) -> dict[str, Any]:
    """Per simulated shape: tau, applied share, nodes verified and accepted per step, draft ms per proposal."""
    out = {}
    for i, shape in enumerate(shapes):
        runs = [row["simulated"][i] for row in rows]
        steps = sum(r["steps"] for r in runs)
        tokens = sum(len(row["answer"]) for row in rows)
        out[shape] = {
            "tau": tokens / steps,
            "applied_share": sum(r["applied"] for r in runs) / steps,
            "verified_per_step": sum(r["verified"] for r in runs) / steps,
            "accepted_per_step": sum(r["accepted"] for r in runs) / steps,
            "draft_ms": 1e3 * sum(r["draft_s"] for r in runs) / max(steps - len(runs), 1),
        }
    return out


def stream_summary(rows: list[dict[str, Any]], width: int) -> dict[str, Any]:
    """Per server step: the lag of the proposal held, whether any of it applied, whether its first level
    held the token after its base (the lag-1 question: is the first guess right as often as forced?), and
    whether that agrees, step by step, with the teacher-forced draft at the same root (its top ``width``)."""
    steps = [step for row in rows for step in row["stream"]["steps"]]
    held = [s for s in steps if "base" in s]
    lag1 = [s for s in held if s["root"] - s["base"] == 1]
    pairs = [
        (s["next_after_base"] in s["first_level"], row["ranks"][s["base"] - row["n_prompt"]] < width)
        for row in rows
        for s in row["stream"]["steps"]
        if "base" in s and s["root"] - s["base"] == 1 and 0 <= s["base"] - row["n_prompt"] < len(row["ranks"])
    ]
    lags = [min(s["root"] - s["base"], 4) for s in held]
    return {
        "steps": len(steps),
        "tau": sum(len(row["answer"]) for row in rows) / max(len(steps), 1),
        "identical": all(row["stream"]["identical"] for row in rows),
        "steps_by_lag_0_1_2_3_4+": [lags.count(k) for k in range(5)],
        "applied_share": sum(s["applied"] > 0 for s in steps) / max(len(steps), 1),
        "lag1_applied_share": sum(s["applied"] > 0 for s in lag1) / max(len(lag1), 1),
        "lag1_first_level_hit": sum(s["next_after_base"] in s["first_level"] for s in lag1) / max(len(lag1), 1),
        "lag1_forced_hit_at_the_same_roots": sum(f for _, f in pairs) / max(len(pairs), 1),
        "lag1_stream_vs_forced_disagree": sum(h != f for h, f in pairs),
        "lag1_compared": len(pairs),
        "tally_applied_share": [row["stream"]["tally"]["applied_share"] for row in rows if row["stream"]["tally"]],
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ranks = [r for row in rows for r in row["ranks"]]
    rounds = [hit for row in rows for _, hit in row["rounds"]]
    at_roots = [(row["ranks"][root - row["n_prompt"]] == 0, hit) for row in rows for root, hit in row["rounds"]]
    return {
        "positions": len(ranks),
        "forced_top": {k: sum(r < k for r in ranks) / len(ranks) for k in TOP_KS},
        "rounds": len(rounds),
        "rounds_depth1": sum(rounds) / len(rounds),
        "forced_at_round_roots_top1": sum(f for f, _ in at_roots) / len(at_roots),
        "forced_vs_rounds_disagree": sum(f != h for f, h in at_roots),
    }


if __name__ == "__main__":
    main()
