"""The re-sync rule: the offline tail after a rejection as a lookup draft (drafts.decoding.resync)."""

from __future__ import annotations

import pytest
import torch

from drafts.acceptance import accept_tree
from drafts.decoding.resync import OfflineTail, ResyncConfig, resync_greedy, spent_on
from drafts.errors import ConfigError
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree


def test_a_swapped_word_proposes_the_rest_of_the_tail_below_the_correction() -> None:
    tail = OfflineTail((50, 7, 8, 9))  # 50 was rejected; the target wrote another token instead

    lookup = tail.lookup(root=60)

    assert lookup.tree.tokens == (7, 8, 9)
    assert lookup.tree.is_chain
    assert lookup.origin == (1, 2, 3)


def test_every_tail_position_holding_the_root_proposes_the_tail_after_it_as_one_trie() -> None:
    tail = OfflineTail((50, 3, 4, 5, 3, 4, 6), replaced=False)

    lookup = tail.lookup(root=3)

    assert lookup.tree.tokens == (4, 5, 3, 4, 6, 6)  # 3 -> 4 shared by both chains, then they part
    assert lookup.tree.parents == (0, 1, 2, 3, 4, 1)
    assert lookup.origin == (2, 3, 4, 5, 6, 6)


def test_the_lookup_stays_within_its_node_budget_nearest_chain_first() -> None:
    tail = OfflineTail(tuple(range(40)), ResyncConfig(nodes=5))

    assert tail.lookup(root=99).tree.tokens == (1, 2, 3, 4, 5)
    assert tail.lookup(root=99, nodes=2).size == 2


def test_advance_spends_the_accepted_tail_tokens_and_drops_the_tail_after_patience_misses() -> None:
    tail = OfflineTail((50, 7, 8, 9, 10), ResyncConfig(patience=2))

    assert tail.advance([1, 2]) == 2
    assert (tail.cursor, tail.replaced, tail.misses) == (3, True, 0)
    assert tail.starts(root=11) == [3]
    tail.advance([], proposed=False)  # nothing to propose: no miss
    assert tail.live and tail.misses == 0 and not tail.replaced
    tail.advance([])
    assert tail.live
    tail.advance([])
    assert not tail.live


def test_a_spent_tail_is_not_live() -> None:
    tail = OfflineTail((50, 7))
    tail.advance([1])
    assert not tail.live


def test_grafted_keeps_a_node_of_both_trees_once_and_marks_the_lookup_ones() -> None:
    base = DraftTree((7, 4, 8), (0, 0, 1))  # the draft's: 7 -> 8, and 4
    tail = OfflineTail((50, 7, 9, 1))  # below the correction: 7 -> 9 -> 1

    grafted = tail.grafted(base, root=60)

    assert grafted.tree.tokens == (7, 4, 8, 9, 1)
    assert grafted.tree.parents == (0, 0, 1, 1, 4)
    assert grafted.origin == (1, None, None, 2, 3)
    assert grafted.added == 2 and grafted.proposes
    assert spent_on([1, 4, 5], grafted.origin) == [1, 2, 3]
    assert spent_on([1, 3], grafted.origin) == [1]
    assert spent_on([2], grafted.origin) == []


def test_a_draft_node_the_tail_holds_gets_the_tail_after_it_below_it() -> None:
    base = DraftTree.chain([5, 6])  # the draft's path passes 6, where the offline text goes on 6 -> 7 -> 8
    tail = OfflineTail((50, 6, 7, 8), replaced=False)

    grafted = tail.grafted(base, root=60)

    assert grafted.tree.tokens == (5, 6, 7, 8)
    assert grafted.tree.is_chain
    assert grafted.origin == (None, None, 2, 3)
    assert spent_on([1, 2, 3, 4], grafted.origin) == [2, 3]


def test_grafted_refuses_a_tree_with_proposals_q() -> None:
    base = DraftTree.chain([1], torch.ones(1, 4) / 4)
    with pytest.raises(ValueError, match="without q"):
        OfflineTail((50, 7)).grafted(base, root=1)


def test_a_lookup_path_is_verified_like_any_draft_at_t0() -> None:
    """The grafted tree through the one acceptance rule: the target's argmax path is the tail's."""
    grafted = OfflineTail((50, 7, 8)).grafted(DraftTree.chain([4]), root=60)
    logits = torch.full((grafted.size + 1, 10), -1.0)
    for row, best in enumerate([7, 0, 8, 3]):  # after root: 7; after 4: 0; after 7: 8; after 8: 3
        logits[row, best] = 1.0

    acceptance = accept_tree(grafted.tree, logits, SamplingConfig(temperature=0.0))

    assert spent_on(acceptance.path, grafted.origin) == [1, 2]
    assert acceptance.next_token == 3


def test_resync_greedy_keeps_the_tail_tokens_the_target_writes_again() -> None:
    offline = (50, 2, 3, 4, 5)  # the target: 60 instead of 50, then an added word 61, then 2 3 4 5
    reference = [60, 61, 2, 3, 4, 5, 6]

    # 2 3 4 5 below 60: 61 refuses it (a miss); nothing below 61; the target's 2, then 3 4 5 below it
    assert resync_greedy(OfflineTail(offline), reference, start=1) == 3
    assert resync_greedy(OfflineTail((50, 8, 9)), reference, start=1) == 0


def test_a_bad_config_names_the_cause() -> None:
    with pytest.raises(ConfigError, match="patience"):
        ResyncConfig(patience=0)


def test_a_far_match_spends_only_its_own_tokens_and_the_ones_before_it_stay_proposed() -> None:
    tail = OfflineTail((50, 28, 1, 28, 2, 28, 3), replaced=False)

    assert tail.advance([6]) == 1  # the target took the last "28 3": 1 and 2 were not kept, yet
    assert tail.cursor == 7 and tail.live
    assert tail.starts(root=28, swap=False) == [1, 3]  # before the cursor, unspent
    assert tail.lookup(root=28).tree.tokens == (1, 28, 2, 28, 2, 28)  # each chain ends before a spent token
    tail.advance([2, 4])
    assert tail.lookup(root=28).size == 0  # every token after a 28 kept once


def test_a_chain_stops_at_a_spent_token() -> None:
    tail = OfflineTail((50, 5, 6, 7, 8), replaced=False)
    tail.advance([3])

    assert tail.lookup(root=5).tree.tokens == (6,)  # 7 was kept already
