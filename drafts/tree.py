"""Draft token trees: the candidates a drafter proposes and the target verifies in one pass.

Index 0 is the *root*: the newest token the target has not processed yet (the previous round's
bonus token). Nodes 1..N are the drafted candidates; ``parents[i]`` names the parent of node
``i + 1`` as a tree index (0 = root), and parents always come before their children, siblings in
the drafter's order of preference (best first). A chain of gamma tokens is the tree whose node i
has parent i - 1.

The target runs over [root, node 1, ..., node N] at positions ``prefix_len + depth`` with an
ancestor mask: each row sees the whole prefix and its own ancestors (itself included).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from drafts.sparse_proposal import SparseProposal


@dataclass(frozen=True)
class DraftTree:
    """N drafted candidates below the root, in topological order."""

    tokens: tuple[int, ...]  # token id of nodes 1..N
    parents: tuple[int, ...]  # tree index of each node's parent (0 = root), parents[i] <= i
    q: torch.Tensor | None = None  # (N, V) distribution node i was sampled from; None = deterministic
    q_sparse: SparseProposal | None = None  # the same as top-K rows (drafts.sparse_proposal); at most one of the two
    depths: tuple[int, ...] = field(init=False)  # depth of nodes 0..N (root = 0)

    def __post_init__(self) -> None:
        if len(self.tokens) != len(self.parents):
            raise ValueError("tokens and parents must have the same length")
        depths = [0]
        for i, parent in enumerate(self.parents):
            if not 0 <= parent <= i:
                raise ValueError(f"node {i + 1} has parent {parent}: parents must come first")
            depths.append(depths[parent] + 1)
        object.__setattr__(self, "depths", tuple(depths))

    @classmethod
    def chain(
        cls, tokens: list[int] | tuple[int, ...], q: torch.Tensor | None = None, q_sparse: SparseProposal | None = None
    ) -> DraftTree:
        """A chain: each token follows the previous one."""
        return cls(tuple(tokens), tuple(range(len(tokens))), q, q_sparse)

    @property
    def size(self) -> int:
        """Number of drafted nodes N (the root excluded)."""
        return len(self.tokens)

    @property
    def is_chain(self) -> bool:
        return all(parent == i for i, parent in enumerate(self.parents))

    def children(self, node: int) -> list[int]:
        """Tree indices of ``node``'s children, best first."""
        return [i + 1 for i, parent in enumerate(self.parents) if parent == node]

    def child_with(self, node: int, token: int) -> int | None:
        """The first (best) child of ``node`` whose token is ``token``, if any."""
        return next((child for child in self.children(node) if self.tokens[child - 1] == token), None)

    def path(self, node: int) -> list[int]:
        """Tree indices from the root's first child down to ``node`` (empty for the root)."""
        out: list[int] = []
        while node != 0:
            out.append(node)
            node = self.parents[node - 1]
        return out[::-1]

    def input_ids(self, root_token: int) -> list[int]:
        """Token ids the target runs over: [root, node 1, ..., node N]."""
        return [root_token, *self.tokens]

    def ancestor_mask(self) -> torch.Tensor:
        """(N+1, N+1) bool: row i may attend column j iff j is i or an ancestor of i."""
        n = self.size + 1
        mask = torch.zeros(n, n, dtype=torch.bool)
        mask[0, 0] = True
        for i, parent in enumerate(self.parents, start=1):
            mask[i] = mask[parent]
            mask[i, i] = True
        return mask
