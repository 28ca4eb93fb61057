"""Accept or reject drafted tokens against the target: the one home of that rule.

Notation (Leviathan et al. 2023; Chen et al. 2023; SpecInfer, Miao et al. 2024):
``p`` is the target's distribution at a node, ``q`` the draft's proposal from which a child
token ``x`` was drawn. A child is accepted with probability ``min(1, p(x) / q(x))``; on
rejection the target distribution becomes the residual ``p <- norm(max(p - q, 0))`` and the next
sibling is tried. When every child is rejected the next token is drawn from the residual; when a
leaf is accepted it is drawn from the target's distribution there (the *bonus* token).

A deterministic candidate (a top-k child of EAGLE-2's tree, a prompt-lookup match) is a proposal
with ``q = δ_x``: accepted with probability ``p(x)``, and on rejection ``p(x)`` is zeroed and the
rest renormalised: the multi-candidate rule EAGLE and SpecInfer use. Both cases keep the output
distributed exactly as the target's (lossless). A chain is the tree with one child per node.

A proposal sent as its top K entries (``tree.q_sparse``) is the distribution ``q'`` the draft
really sampled from, scattered into zeros over the vocabulary here: the rule above then holds
as it is (the argument: :mod:`drafts.sparse_proposal`).

Greedy decoding (temperature 0) is the limit where ``p`` is one-hot: accept while the token is
the target's argmax, then emit the argmax.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from drafts.sampling import SamplingConfig, logits_to_probs, sample
from drafts.tree import DraftTree


@dataclass(frozen=True)
class Acceptance:
    """The outcome of verifying one draft tree."""

    path: tuple[int, ...]  # accepted tree indices, root's child first (empty: none accepted)
    next_token: int  # the target's token after the accepted path (bonus or correction)

    @property
    def accepted(self) -> int:
        return len(self.path)


def accept_tree(
    tree: DraftTree,
    target_logits: torch.Tensor,
    cfg: SamplingConfig,
    generator: torch.Generator | None = None,
) -> Acceptance:
    """Verify ``tree`` given the target's logits (N+1, V) at [root, node 1..N]."""
    if cfg.greedy:
        return _accept_greedy(tree, target_logits)
    return _accept_stochastic(tree, target_logits, cfg, generator)


def accept_chain(
    tokens: list[int],
    q: torch.Tensor | None,
    target_logits: torch.Tensor,
    cfg: SamplingConfig,
    generator: torch.Generator | None = None,
) -> Acceptance:
    """Verify a chain of drafted ``tokens`` (gamma,) with proposals ``q`` (gamma, V) or None."""
    return accept_tree(DraftTree.chain(tokens, q), target_logits, cfg, generator)


def _accept_greedy(tree: DraftTree, target_logits: torch.Tensor) -> Acceptance:
    argmax = target_logits.argmax(dim=-1).tolist()  # (N+1,) target's choice after each node
    node, path = 0, list[int]()
    while True:
        match = next((c for c in tree.children(node) if tree.tokens[c - 1] == argmax[node]), None)
        if match is None:
            return Acceptance(tuple(path), int(argmax[node]))
        path.append(match)
        node = match


def _accept_stochastic(
    tree: DraftTree,
    target_logits: torch.Tensor,
    cfg: SamplingConfig,
    generator: torch.Generator | None,
) -> Acceptance:
    node, path = 0, list[int]()
    while True:
        p = logits_to_probs(target_logits[node], cfg)  # (V,)
        accepted = None
        for child in tree.children(node):
            x = tree.tokens[child - 1]
            q = _proposal(tree, child, p)
            if _draw_uniform(generator) * q[x] < p[x]:  # u < p(x)/q(x), without dividing by 0
                accepted = child
                break
            p = _residual(p, q)
        if accepted is None:
            return Acceptance(tuple(path), int(sample(p, generator)))
        path.append(accepted)
        node = accepted


def _proposal(tree: DraftTree, child: int, like: torch.Tensor) -> torch.Tensor:
    """The proposal ``q`` (V,) that ``child`` was drawn from: the draft's (dense, or its top K
    scattered into zeros: :mod:`drafts.sparse_proposal`), or δ_x."""
    if tree.q_sparse is not None:
        return tree.q_sparse.dense_row(child - 1, like)
    if tree.q is not None:
        return tree.q[child - 1].to(like)
    delta = torch.zeros_like(like)
    delta[tree.tokens[child - 1]] = 1.0
    return delta


def _residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(p - q, 0)); if nothing is left (p == q), p itself (rejection had probability 0)."""
    r = (p - q).clamp_min(0.0)
    total = r.sum()
    return r / total if total > 0 else p


def _draw_uniform(generator: torch.Generator | None) -> float:
    return float(torch.rand((), generator=generator))
