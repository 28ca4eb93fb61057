"""EAGLE-2's context-aware dynamic draft tree (Li et al. 2024, EMNLP), over any neural draft.

Expand: from the root take the draft's top-k; at each further depth run the k frontier nodes
in one batched step (each sees the committed context plus its own ancestors), give each its
top-k children scored by cumulative log-probability, and keep the best k as the next frontier.
Rerank: pool every generated node and keep the ``total`` best; a child never scores above its
parent, so the selection is a subtree. Candidates are deterministic (q = δ), which the
multi-candidate acceptance rule verifies losslessly at any temperature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from drafts.drafters.base import DraftShape
from drafts.neural.base import NeuralDraft
from drafts.tree import DraftTree


@dataclass
class _Node:
    token: int  # target id
    parent: int  # index into the node list, -1 = root
    depth: int
    score: float  # cumulative draft log-probability
    slot: int = -1  # scratch slot once the node has been run through the draft


def dynamic_tree(model: NeuralDraft, root: int, position: int, shape: DraftShape) -> DraftTree:
    """Grow and select an EAGLE-2 tree below ``root`` (at ``position``)."""
    device = model.parts.head_weight.device
    logits, state = model.step(
        torch.tensor([root], device=device), torch.tensor([position], device=device), None, model.initial_state()
    )
    nodes: list[_Node] = []
    ancestors: list[list[int]] = [[0]]  # scratch slot -> slots it may see (itself included)
    frontier = _expand(nodes, logits, [-1], [0.0], 1, shape.tree_top_k, model)
    states = {-1: state}  # node index -> the draft state its children start from
    for depth in range(2, shape.tree_depth + 1):
        frontier = frontier[: shape.tree_top_k]
        mask = _scratch_mask(nodes, frontier, ancestors, device)
        parent_state = _gather_state(states, [nodes[i].parent for i in frontier])
        tokens = torch.tensor([nodes[i].token for i in frontier], device=device)
        positions = torch.full((len(frontier),), position + depth - 1, device=device)
        logits, out = model.step(tokens, positions, mask, parent_state)
        for row, i in enumerate(frontier):
            states[i] = None if out is None else out[row : row + 1]
        frontier = _expand(nodes, logits, frontier, [nodes[i].score for i in frontier], depth, shape.tree_top_k, model)
    return _select(nodes, shape.tree_total)


def _expand(
    nodes: list[_Node],
    logits: torch.Tensor,
    parents: list[int],
    scores: list[float],
    depth: int,
    k: int,
    model: NeuralDraft,
) -> list[int]:
    """Add each parent's top-k children; return the k best new nodes (the next frontier)."""
    logp = torch.log_softmax(logits.float(), dim=-1)  # (n, Dv)
    top = torch.topk(logp, min(k, logp.shape[-1]), dim=-1)
    ids = model.parts.to_target_ids(top.indices).tolist()
    new: list[int] = []
    for row, parent in enumerate(parents):
        for token, lp in zip(ids[row], top.values[row].tolist(), strict=True):
            nodes.append(_Node(token, parent, depth, scores[row] + lp))
            new.append(len(nodes) - 1)
    return sorted(new, key=lambda i: -nodes[i].score)[:k]


def _scratch_mask(
    nodes: list[_Node], frontier: list[int], ancestors: list[list[int]], device: torch.device
) -> torch.Tensor:
    """Give the frontier nodes scratch slots; (n, S) mask of the slots each may see."""
    for i in frontier:
        parent = nodes[i].parent
        parent_slots = ancestors[nodes[parent].slot] if parent >= 0 else ancestors[0]
        nodes[i].slot = len(ancestors)
        ancestors.append([*parent_slots, nodes[i].slot])
    mask = torch.zeros(len(frontier), len(ancestors), dtype=torch.bool, device=device)
    for row, i in enumerate(frontier):
        mask[row, ancestors[nodes[i].slot]] = True
    return mask


def _gather_state(states: dict[int, Any], parents: list[int]) -> Any:
    rows = [states[p] for p in parents]
    return None if rows[0] is None else torch.cat(rows, dim=0)


def _select(nodes: list[_Node], total: int) -> DraftTree:
    """The ``total`` best nodes (with their ancestors) as a topologically ordered tree."""
    chosen = set(sorted(range(len(nodes)), key=lambda i: -nodes[i].score)[:total])
    for i in list(chosen):
        while nodes[i].parent >= 0 and nodes[i].parent not in chosen:
            i = nodes[i].parent
            chosen.add(i)
    order = sorted(chosen, key=lambda i: (nodes[i].depth, -nodes[i].score))
    index = {node: k + 1 for k, node in enumerate(order)}  # tree index (root = 0)
    tokens = tuple(nodes[i].token for i in order)
    parents = tuple(index[nodes[i].parent] if nodes[i].parent >= 0 else 0 for i in order)
    return DraftTree(tokens, parents)
