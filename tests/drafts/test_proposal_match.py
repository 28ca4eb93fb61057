from __future__ import annotations

import pytest
import torch

from drafts.proposal_match import applicable_subtree
from drafts.sparse_proposal import SparseProposal
from drafts.tree import DraftTree

# the docstring's tree: root ─ a ─ b ─ x ─ y, b ─ z, root ─ d ─ e, as tokens a=1 b=2 x=3 y=4 z=5 d=6 e=7;
# tree indices a..y 1..4, d 5, z 6, e 7 (parents first)
TREE = DraftTree((1, 2, 3, 4, 6, 5, 7), (0, 1, 2, 3, 0, 2, 5))
START = 100  # the session index of the first known token


def _q(tree: DraftTree) -> torch.Tensor:
    """A distinct q row per node: row i is all i + 1, so the rows kept can be read back."""
    return torch.arange(1, tree.size + 1, dtype=torch.float32).view(-1, 1).expand(-1, 8).clone()  # (N, 8)


def test_a_proposal_from_the_newest_token_applies_whole() -> None:
    kept = applicable_subtree(TREE, base=START + 2, tokens=[9, 9, 42], start=START, limit=64)

    assert kept == TREE


@pytest.mark.parametrize(
    ("held", "tokens", "parents"),
    [
        ([1], (2, 3, 4, 5), (0, 1, 2, 1)),  # one token on: below a
        ([1, 2], (3, 4, 5), (0, 1, 0)),  # two on: below b, as the docstring draws
        ([1, 2, 3], (4,), (0,)),  # three on: below x
        ([6], (7,), (0,)),  # the second branch
    ],
)
def test_a_proposal_older_than_the_root_keeps_the_subtree_below_the_held_tokens(
    held: list[int], tokens: tuple[int, ...], parents: tuple[int, ...]
) -> None:
    kept = applicable_subtree(TREE, base=START, tokens=[42, *held], start=START, limit=64)

    assert kept is not None and (kept.tokens, kept.parents) == (tokens, parents)


def test_a_chain_matched_at_every_depth_keeps_what_is_below() -> None:
    chain = DraftTree.chain([10, 11, 12, 13])

    for depth in range(4):
        kept = applicable_subtree(chain, base=START, tokens=[0, *range(10, 10 + depth)], start=START, limit=64)
        assert kept is not None and kept.tokens == tuple(range(10 + depth, 14)) and kept.is_chain


def test_a_held_token_the_tree_did_not_guess_leaves_nothing() -> None:
    assert applicable_subtree(TREE, base=START, tokens=[42, 1, 5], start=START, limit=64) is None  # z is not below a
    assert applicable_subtree(TREE, base=START, tokens=[42, 7], start=START, limit=64) is None  # e is not a child


def test_a_proposal_the_session_has_outrun_or_not_reached_leaves_nothing() -> None:
    held = [42, 1, 2, 3, 4]  # past the leaf y
    assert applicable_subtree(TREE, base=START, tokens=held, start=START, limit=64) is None
    assert applicable_subtree(TREE, base=START + 3, tokens=[42, 1], start=START, limit=64) is None  # base after c
    assert applicable_subtree(TREE, base=START - 1, tokens=[42, 1], start=START, limit=64) is None  # before start


def test_a_leaf_match_leaves_nothing_to_verify() -> None:
    assert applicable_subtree(TREE, base=START, tokens=[42, 6, 7], start=START, limit=64) is None


def test_dense_q_rows_go_with_their_nodes() -> None:
    tree = DraftTree(TREE.tokens, TREE.parents, _q(TREE))

    kept = applicable_subtree(tree, base=START, tokens=[42, 1, 2], start=START, limit=64)

    assert kept is not None and kept.q is not None
    assert kept.q[:, 0].tolist() == [3.0, 4.0, 6.0]  # nodes x, y, z of the proposal (indices 3, 4, 6)


def test_sparse_q_rows_go_with_their_nodes() -> None:
    indices = torch.tensor(TREE.tokens, dtype=torch.int32).view(-1, 1)  # (N, 1): each node's own token
    weights = torch.arange(1, 8, dtype=torch.float16).view(-1, 1)
    tree = DraftTree(TREE.tokens, TREE.parents, q_sparse=SparseProposal(indices, weights))

    kept = applicable_subtree(tree, base=START, tokens=[42, 6], start=START, limit=64)

    assert kept is not None and kept.q_sparse is not None and kept.q is None
    assert kept.q_sparse.indices.tolist() == [[7]] and kept.q_sparse.weights.tolist() == [[7.0]]
    kept.q_sparse.check(torch.tensor(kept.tokens))  # still a proposal its tokens were sampled from


def test_the_size_cap_keeps_the_first_nodes_in_index_order() -> None:
    tree = DraftTree(TREE.tokens, TREE.parents, _q(TREE))

    kept = applicable_subtree(tree, base=START, tokens=[42], start=START, limit=3)

    assert kept is not None and (kept.tokens, kept.parents) == ((1, 2, 3), (0, 1, 2))
    assert kept.q is not None and kept.q[:, 0].tolist() == [1.0, 2.0, 3.0]


def test_the_depth_cap_keeps_the_upper_levels() -> None:
    kept = applicable_subtree(TREE, base=START, tokens=[42], start=START, limit=64, max_depth=2)

    assert kept is not None and (kept.tokens, kept.parents) == ((1, 2, 6, 7), (0, 1, 0, 3))
