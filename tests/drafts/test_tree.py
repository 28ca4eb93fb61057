from __future__ import annotations

import pytest
import torch

from drafts.tree import DraftTree

# The tree these tests draw by hand (tree indices, tokens in brackets):
#
#              0 (root)
#            /          \
#        1 [10]        2 [20]
#        /    \            \
#    3 [30]  4 [40]       5 [50]
#      |
#    6 [60]
HAND_TREE = DraftTree(tokens=(10, 20, 30, 40, 50, 60), parents=(0, 0, 1, 1, 2, 3))


def test_depths_count_the_steps_from_the_root() -> None:
    assert HAND_TREE.depths == (0, 1, 1, 2, 2, 2, 3)


def test_size_excludes_the_root() -> None:
    assert HAND_TREE.size == 6


@pytest.mark.parametrize(
    ("node", "children"), [(0, [1, 2]), (1, [3, 4]), (2, [5]), (3, [6]), (4, []), (6, [])]
)
def test_children_come_in_the_drafters_order(node: int, children: list[int]) -> None:
    assert HAND_TREE.children(node) == children


@pytest.mark.parametrize(("node", "path"), [(0, []), (1, [1]), (5, [2, 5]), (6, [1, 3, 6])])
def test_path_runs_from_the_roots_child_down_to_the_node(node: int, path: list[int]) -> None:
    assert HAND_TREE.path(node) == path


def test_input_ids_put_the_root_token_first() -> None:
    assert HAND_TREE.input_ids(7) == [7, 10, 20, 30, 40, 50, 60]


def test_ancestor_mask_lets_each_node_see_itself_and_its_ancestors_only() -> None:
    expected = torch.tensor(
        [
            # 0  1  2  3  4  5  6
            [1, 0, 0, 0, 0, 0, 0],  # 0
            [1, 1, 0, 0, 0, 0, 0],  # 1
            [1, 0, 1, 0, 0, 0, 0],  # 2
            [1, 1, 0, 1, 0, 0, 0],  # 3
            [1, 1, 0, 0, 1, 0, 0],  # 4
            [1, 0, 1, 0, 0, 1, 0],  # 5
            [1, 1, 0, 1, 0, 0, 1],  # 6
        ],
        dtype=torch.bool,
    )

    assert torch.equal(HAND_TREE.ancestor_mask(), expected)


def test_a_chain_is_detected_and_has_a_causal_mask() -> None:
    chain = DraftTree.chain([5, 6, 7])

    assert chain.is_chain
    assert chain.parents == (0, 1, 2)
    assert chain.depths == (0, 1, 2, 3)
    assert torch.equal(chain.ancestor_mask(), torch.tril(torch.ones(4, 4, dtype=torch.bool)))


def test_a_branching_tree_is_not_a_chain() -> None:
    assert not HAND_TREE.is_chain
    assert not DraftTree((1, 2), (0, 0)).is_chain


def test_an_empty_draft_is_a_chain_of_nothing() -> None:
    empty = DraftTree.chain([])

    assert empty.size == 0 and empty.is_chain
    assert empty.depths == (0,)
    assert torch.equal(empty.ancestor_mask(), torch.tensor([[True]]))


def test_chain_keeps_the_proposal_distributions() -> None:
    q = torch.full((2, 4), 0.25)

    assert DraftTree.chain([1, 2], q).q is q


@pytest.mark.parametrize("parents", [(1,), (0, 2), (0, -1), (0, 0, 4)])
def test_a_parent_that_does_not_come_first_is_refused(parents: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="parents must come first"):
        DraftTree(tuple(range(len(parents))), parents)


def test_tokens_and_parents_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        DraftTree((1, 2), (0,))
