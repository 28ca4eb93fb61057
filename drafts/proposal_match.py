"""Which part of a client's proposal still applies when the verifier steps (speculative streaming).

In a proposing Generate (:mod:`drafts.protocol.messages`, protocol 6) the server decodes without
waiting; the client drafts a tree from the newest token it knows of and sends it as a Propose
whose root is the session token at index ``base``. By the time the server next steps, the session
may have moved on: its root (not processed yet) is at index ``c >= base``, and the tokens at
indices ``base + 1 .. c`` (``held``) are ones the client had not seen when it drafted. The part of
the proposal that still applies is the subtree below the path of the tree that spells ``held``::

    proposal (base = c - 2)             held = [a, b]           this step's tree (root at c)
    root ─ a ─ b ─ x ─ y                walk: root -a-> n1      root ─ x ─ y
         │     └ z                            n1 -b-> n2             └ z
         └ d ─ e                        subtree below n2

A token of ``held`` with no child to match it means the client guessed a different future: none
of it applies (the step verifies the root alone). ``base == c`` keeps the whole tree.

Exactness at T > 0 (Leviathan et al. 2023, Chen et al. 2023; :mod:`drafts.acceptance`): every
kept node was sampled by the draft from its q row given its ancestors, and the ancestors of the
kept subtree are exactly the tokens the session holds, so the subtree is a proper draft of the
next tokens with the same q rows. Which subtree is kept depends only on tokens sampled before
any kept node was looked at, so the choice cannot bias what the target accepts.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from drafts.sparse_proposal import SparseProposal
from drafts.tree import DraftTree


def applicable_subtree(
    tree: DraftTree, base: int, tokens: Sequence[int], start: int, limit: int, max_depth: int | None = None
) -> DraftTree | None:
    """The part of ``tree`` (its root the session token at index ``base``) that applies below the newest token.

    ``tokens`` are the session's tokens at indices ``start, start + 1, ...``; the last is the
    root of the coming step (index c, not processed yet), so ``held`` = those at ``base + 1 .. c``.
    The kept subtree is re-indexed under that root with its q rows, cut to nodes at most
    ``max_depth`` below it and then to the first ``limit`` nodes in index order (parents come
    first, so the cut is still a tree). None when nothing applies: ``base`` outside
    ``[start, c]``, a held token the tree does not hold, or no node below the match.
    """
    c = start + len(tokens) - 1
    if not start <= base <= c:
        return None
    node = 0
    for token in tokens[base - start + 1 :]:
        child = tree.child_with(node, token)
        if child is None:
            return None
        node = child
    kept = _descendants(tree, node, max_depth)[:limit]
    return _reindexed(tree, node, kept) if kept else None


def _descendants(tree: DraftTree, node: int, max_depth: int | None) -> list[int]:
    """Tree indices strictly below ``node``, in index order, at most ``max_depth`` levels down."""
    below = {node}
    out: list[int] = []
    for index in range(node + 1, tree.size + 1):
        parent = tree.parents[index - 1]
        if parent in below and (max_depth is None or tree.depths[index] - tree.depths[node] <= max_depth):
            below.add(index)
            out.append(index)
    return out


def _reindexed(tree: DraftTree, node: int, kept: list[int]) -> DraftTree:
    """The nodes ``kept`` (below ``node``) as a tree whose root is ``node``, q rows carried along."""
    new_index = {node: 0} | {old: new for new, old in enumerate(kept, start=1)}
    tokens = tuple(tree.tokens[old - 1] for old in kept)
    parents = tuple(new_index[tree.parents[old - 1]] for old in kept)
    rows = torch.tensor([old - 1 for old in kept], dtype=torch.int64)  # q row of tree node i is row i - 1
    q = None if tree.q is None else tree.q.index_select(0, rows)
    sparse = tree.q_sparse
    if sparse is not None:
        sparse = SparseProposal(sparse.indices.index_select(0, rows), sparse.weights.index_select(0, rows))
    return DraftTree(tokens, parents, q, sparse)
