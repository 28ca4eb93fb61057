"""Record every node EAGLE-2's expansion generates in each round of a real speculative decode, with the
features a per-node score could use at tree-build time, labelled against the target's greedy answer.

    taskset -c 0 python3 rank_rounds.py --checkpoint moa=DIR --checkpoint eagle=DIR --method moa,eagle \
        --skip 30 --limit 24 --max-new-tokens 96 --tree 6,10,60 --json rounds.json

Session 13's ``tree_rounds.py`` (tree-scoring/) plus, per node: ``rank`` (its position among its parent's
top-k by q, 0 = the draft's first choice), ``entropy`` (of the draft distribution it was drawn from, nats)
and ``expanded`` (it was a frontier node, run through the draft). Decoding uses the default scoring.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

import drafts.neural.tree_search as tree_search
from drafts.bench.cli import fitting_prompts, register_checkpoints
from drafts.data.prompts import load_prompts
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.speculative import generate
from drafts.drafters.base import DraftShape
from drafts.drafters.registry import drafter_spec
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.tree_search import TreeNode, grow, select
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree

_FEATURES: dict[int, float] = {}  # node index -> the entropy of the distribution it was drawn from (this round)
_expand = tree_search._expand


def _recording_expand(nodes: list[TreeNode], logits: torch.Tensor, parents: list[int], *rest: Any) -> list[int]:
    """``tree_search._expand`` noting the entropy of each new node's distribution (its rank: TreeNode.rank)."""
    before = len(nodes)
    frontier = _expand(nodes, logits, parents, *rest)
    logp = torch.log_softmax(logits.float(), dim=-1)
    entropy = (-(logp.exp() * logp).sum(-1)).tolist()
    k = (len(nodes) - before) // len(parents)
    for j in range(before, len(nodes)):
        _FEATURES[j] = entropy[(j - before) // k]
    return frontier


tree_search._expand = _recording_expand  # type: ignore[assignment]


class RecordingDrafter(NeuralDrafter):
    """A trained draft whose trees keep every generated node (and its features) with the round's position."""

    rounds: list[tuple[int, list[TreeNode], dict[int, float]]]

    def _tree(self, root: int, position: int, shape: DraftShape) -> DraftTree:
        self._drop()
        _FEATURES.clear()
        with torch.inference_mode():
            nodes = grow(self.model, root, position, shape, self.tree_scoring)
        self.rounds.append((position, nodes, dict(_FEATURES)))
        return select(nodes, shape.tree_total)


def labelled(nodes: list[TreeNode], entropy: dict[int, float], answer: list[int]) -> dict[str, Any]:
    """The round's nodes as columns; ``answer``: the target's tokens after the root."""
    on_path: list[bool] = []
    for node in nodes:
        parent_ok = node.parent < 0 or on_path[node.parent]
        on_path.append(parent_ok and node.depth <= len(answer) and answer[node.depth - 1] == node.token)
    return {
        "depth": [n.depth for n in nodes],
        "log_q": [round(n.log_q, 6) for n in nodes],
        "parent": [n.parent for n in nodes],
        "on_path": [int(x) for x in on_path],
        "rank": [n.rank for n in nodes],
        "entropy": [round(entropy[i], 4) for i in range(len(nodes))],
        "expanded": [int(n.slot >= 0) for n in nodes],
    }


def record_prompt(runner: TargetRunner, name: str, prompt: list[int], config: DecodeConfig) -> dict[str, Any]:
    built = drafter_spec(name).build(runner, [])
    assert isinstance(built, NeuralDrafter)
    drafter = RecordingDrafter(built.model, name)
    drafter.rounds = []
    longer = replace(config, max_new_tokens=config.max_new_tokens + config.shape.tree_depth)
    reference = generate_autoregressive(runner, prompt, longer).tokens
    gen = generate(runner, drafter, prompt, config)
    full = prompt + reference
    rounds = [labelled(nodes, feats, full[position + 1 :]) for position, nodes, feats in drafter.rounds]
    return {"identical_to_ar": gen.tokens == reference[: len(gen.tokens)], "tokens": len(gen.tokens), "rounds": rounds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--checkpoint", action="append", default=[])
    p.add_argument("--method", default="moa,eagle")
    p.add_argument("--skip", type=int, default=30)
    p.add_argument("--limit", type=int, default=24)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--tree", default="6,10,60")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    register_checkpoints(args.checkpoint)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32, "auto"))
    prompts, _ = fitting_prompts(runner, load_prompts("sharegpt-heldout")[args.skip :], args.limit, args.max_new_tokens)
    config = DecodeConfig(args.max_new_tokens, shape=DraftShape.parse_tree(args.tree))
    out: dict[str, Any] = {"config": vars(args) | {"json": str(args.json)}, "drafts": {}}
    for name in args.method.split(","):
        out["drafts"][name] = [record_prompt(runner, name, prompt, config) for prompt in prompts]
        runs = out["drafts"][name]
        n = sum(len(r["rounds"]) for r in runs)
        print(f"{name}: {len(prompts)} prompts, {n} rounds, all = ar: {all(r['identical_to_ar'] for r in runs)}")
    args.json.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
