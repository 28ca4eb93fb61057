from __future__ import annotations

from collections import Counter

import pytest
import torch

from drafts.acceptance import accept_tree
from drafts.proposal_match import applicable_subtree
from drafts.sampling import logits_to_probs
from drafts.sparse_proposal import SparseProposal
from drafts.tree import DraftTree
from tests.drafts.test_acceptance import (
    CHI2_CRITICAL_0_001,
    PLAIN,
    TRIALS,
    assert_distributed_as,
    chi_square,
    iid_tree,
    target_logits,
    tree_target_logits,
)

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


# -- exact at T > 0: a proposal drafted once, kept step after step -------------------------------


def _streamed_two_tokens(limit: int, generator: torch.Generator) -> tuple[int, int]:
    """Speculative streaming of the toy target (tests.drafts.test_acceptance) until two tokens are out:
    one i.i.d. tree drafted at the root (base 0), each step verifying the part of it that still
    applies, at most ``limit`` nodes (so later steps use nodes below tokens the target chose)."""
    proposal = iid_tree((), PLAIN, generator)
    out: list[int] = []
    while len(out) < 2:
        tree = applicable_subtree(proposal, 0, [99, *out], 0, limit) or DraftTree.chain([])  # 99: the root
        logits = tree_target_logits(tuple(out), tree.tokens, tree.parents)
        acceptance = accept_tree(tree, logits, PLAIN, generator)
        out += [tree.tokens[i - 1] for i in acceptance.path] + [acceptance.next_token]
    return out[0], out[1]


@pytest.mark.parametrize("limit", [1, 3])
def test_a_proposal_kept_across_steps_gives_tokens_distributed_as_the_target(limit: int) -> None:
    generator = torch.Generator().manual_seed(limit)
    pairs = [_streamed_two_tokens(limit, generator) for _ in range(TRIALS)]

    p_root = logits_to_probs(target_logits(()), PLAIN)
    assert_distributed_as(Counter(first for first, _ in pairs), p_root)
    given = int(p_root.argmax())
    p_next = logits_to_probs(target_logits((given,)), PLAIN)
    assert_distributed_as(Counter(second for first, second in pairs if first == given), p_next)


def test_the_check_sees_q_rows_that_do_not_follow_their_nodes() -> None:
    # the same run with the kept rows shuffled must fail: the check is sharp enough to see the re-indexing
    generator = torch.Generator().manual_seed(5)

    def shuffled(limit: int, generator: torch.Generator) -> tuple[int, int]:
        proposal = iid_tree((), PLAIN, generator)
        assert proposal.q is not None
        wrong = DraftTree(proposal.tokens, proposal.parents, proposal.q.roll(1, dims=-1))  # q of other tokens
        out: list[int] = []
        while len(out) < 2:
            tree = applicable_subtree(wrong, 0, [99, *out], 0, limit) or DraftTree.chain([])
            acceptance = accept_tree(tree, tree_target_logits(tuple(out), tree.tokens, tree.parents), PLAIN, generator)
            out += [tree.tokens[i - 1] for i in acceptance.path] + [acceptance.next_token]
        return out[0], out[1]

    pairs = [shuffled(3, generator) for _ in range(TRIALS)]

    stat, dof = chi_square(Counter(first for first, _ in pairs), logits_to_probs(target_logits(()), PLAIN))
    assert stat > CHI2_CRITICAL_0_001[dof]


def test_a_fan_one_step_late_keeps_only_the_chain_below_the_guess_the_server_made() -> None:
    # drafts.neural.fan's layout: first level 11, 12, 13 (best first), then each chain's tokens level by level
    fan = DraftTree((11, 12, 13, 21, 22, 23, 31, 32, 33), (0, 0, 0, 1, 2, 3, 4, 5, 6))
    kept = applicable_subtree(fan, base=START, tokens=[9, 12], start=START, limit=64)

    assert kept == DraftTree.chain([22, 32])  # what the step verifies: one chain, whatever the fan's width
    assert applicable_subtree(fan, base=START, tokens=[9, 14], start=START, limit=64) is None  # no guess was right
