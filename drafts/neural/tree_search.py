"""EAGLE-2's context-aware dynamic draft tree (Li et al. 2024, EMNLP), over any neural draft.

Expand: from the root take the draft's top-k; at each further depth run the k frontier nodes
in one batched step (each sees the committed context plus its own ancestors), give each its
top-k children scored by cumulative log-probability, and keep the best k as the next frontier.
Rerank: pool every generated node and keep the ``total`` best; a child never scores above its
parent, so the selection is a subtree. Candidates are deterministic (q = δ), which the
multi-candidate acceptance rule verifies losslessly at any temperature.

A node's score is the sum of its path's log q (EAGLE-2). :class:`TreeScoring` may recalibrate
each term: it becomes ``min(0, slope_d * rank_slope_r * log q + bias_d + rank_bias_r)`` at depth d
for a node that is its parent's r-th child by q (r = 0: the draft's first choice), which changes
which nodes are kept, never what they are, so the tree stays lossless. A measuring tool (``moa-bench
--tree-scoring``): session 13 found the shipped drafts calibrated at every depth, and no per-depth
rule changed tau (s13 tree-scoring/README.md); session 14 found the draft's first choice slightly
under-confident, but a per-rank rule (or a logistic score on rank, entropy, top-1 and parent q) knows
no more than q on held-out prompts and changed no tau (s14 tree-rank/README.md): the default stays EAGLE-2's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from drafts.drafters.base import DraftShape
from drafts.errors import ConfigError
from drafts.neural.base import NeuralDraft
from drafts.tree import DraftTree


@dataclass(frozen=True)
class TreeScoring:
    """Per-depth and per-sibling-rank calibration of the log q a node's score sums (default: EAGLE-2's rule)."""

    slope: tuple[float, ...] = (1.0,)  # log q is multiplied by slope[d - 1] at depth d (the last repeats)
    bias: tuple[float, ...] = (0.0,)  # then bias[d - 1] is added (< 0: a deeper node costs more)
    rank_slope: tuple[float, ...] = (1.0,)  # and by rank_slope[r] for its parent's r-th child (the last repeats)
    rank_bias: tuple[float, ...] = (0.0,)  # and rank_bias[r] added (> 0: trust the draft's first choice more)

    def __post_init__(self) -> None:
        if not all((self.slope, self.bias, self.rank_slope, self.rank_bias)):
            raise ConfigError("a tree scoring needs at least one value per field (e.g. slope=1.2,bias=-0.1)")
        if min(self.slope + self.rank_slope) <= 0:
            raise ConfigError(
                f"tree scoring slopes must be > 0 (the draft's order), got {self.slope} and {self.rank_slope}"
            )

    @property
    def is_default(self) -> bool:
        return self == DEFAULT_SCORING

    def term(self, log_q: float, depth: int, rank: int = 0) -> float:
        """A node's own contribution to its score (never above 0: a child never outscores its parent)."""
        if self.is_default:
            return log_q
        slope = _at(self.slope, depth - 1) * _at(self.rank_slope, rank)
        return min(0.0, slope * log_q + _at(self.bias, depth - 1) + _at(self.rank_bias, rank))

    @classmethod
    def parse(cls, text: str) -> TreeScoring:
        """``"slope=1.2,bias=-0.1"``; per depth ``"slope=1/1.2/1.4,bias=0/-0.1"``; per sibling rank
        ``"rank_bias=0.2/0"``; ``"default"``."""
        if text.strip() in ("", "default"):
            return cls()
        fields: dict[str, tuple[float, ...]] = {}
        try:
            for item in text.split(","):
                key, _, values = item.partition("=")
                if key.strip() not in _FIELDS:
                    raise ValueError(key)
                fields[key.strip()] = tuple(float(v) for v in values.split("/"))
        except ValueError as exc:
            raise ConfigError(
                f"a tree scoring reads slope=A[/A2...],bias=B[/B2...],rank_slope=..,rank_bias=.., got {text!r}"
            ) from exc
        return cls(**fields)

    def describe(self) -> str:
        if self.is_default:
            return "default"
        shown = [k for k in _FIELDS if k in ("slope", "bias") or getattr(self, k) != getattr(DEFAULT_SCORING, k)]
        return ",".join(f"{k}={'/'.join(f'{v:g}' for v in getattr(self, k))}" for k in shown)


_FIELDS = ("slope", "bias", "rank_slope", "rank_bias")


def _at(values: tuple[float, ...], index: int) -> float:
    """``values[index]``, the last value repeating beyond the end."""
    return values[min(index, len(values) - 1)]


DEFAULT_SCORING = TreeScoring()


@dataclass
class TreeNode:
    token: int  # target id
    parent: int  # index into the node list, -1 = root
    depth: int
    log_q: float  # the draft's log-probability of this token given its path
    score: float  # the sum of the scoring's terms along the path
    rank: int = 0  # its place among its parent's top-k children by q (0 = the draft's first choice)
    slot: int = -1  # scratch slot once the node has been run through the draft


def dynamic_tree(
    model: NeuralDraft, root: int, position: int, shape: DraftShape, scoring: TreeScoring = DEFAULT_SCORING
) -> DraftTree:
    """Grow and select an EAGLE-2 tree below ``root`` (at ``position``)."""
    return select(grow(model, root, position, shape, scoring), shape.tree_total)


def grow(model: NeuralDraft, root: int, position: int, shape: DraftShape, scoring: TreeScoring) -> list[TreeNode]:
    """Every node EAGLE-2's expansion generates below ``root``, in order of generation."""
    device = model.parts.head_weight.device
    logits, state = model.step(
        torch.tensor([root], device=device), torch.tensor([position], device=device), None, model.initial_state()
    )
    nodes: list[TreeNode] = []
    ancestors: list[list[int]] = [[0]]  # scratch slot -> slots it may see (itself included)
    frontier = _expand(nodes, logits, [-1], [0.0], 1, shape.tree_top_k, model, scoring)
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
        scores = [nodes[i].score for i in frontier]
        frontier = _expand(nodes, logits, frontier, scores, depth, shape.tree_top_k, model, scoring)
    return nodes


def _expand(
    nodes: list[TreeNode],
    logits: torch.Tensor,
    parents: list[int],
    scores: list[float],
    depth: int,
    k: int,
    model: NeuralDraft,
    scoring: TreeScoring,
) -> list[int]:
    """Add each parent's top-k children; return the k best new nodes (the next frontier)."""
    logp = torch.log_softmax(logits.float(), dim=-1)  # (n, Dv)
    top = torch.topk(logp, min(k, logp.shape[-1]), dim=-1)
    ids = model.parts.to_target_ids(top.indices).tolist()
    new: list[int] = []
    for row, parent in enumerate(parents):
        for rank, (token, lp) in enumerate(zip(ids[row], top.values[row].tolist(), strict=True)):
            nodes.append(TreeNode(token, parent, depth, lp, scores[row] + scoring.term(lp, depth, rank), rank))
            new.append(len(nodes) - 1)
    return sorted(new, key=lambda i: -nodes[i].score)[:k]


def _scratch_mask(
    nodes: list[TreeNode], frontier: list[int], ancestors: list[list[int]], device: torch.device
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


def select(nodes: list[TreeNode], total: int) -> DraftTree:
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
