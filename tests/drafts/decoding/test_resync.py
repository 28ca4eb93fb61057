"""The re-sync rule: the offline tail after a rejection as a lookup draft (drafts.decoding.resync)."""

from __future__ import annotations

import pytest
import torch

from drafts.acceptance import accept_tree
from drafts.decoding.resync import OfflineTail, ResyncConfig, resync_greedy, spent_on
from drafts.errors import ConfigError
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree

SWAP = ResyncConfig(nodes=32, patience=8, resume=(1,), hold=1, levels=False)  # session 12's rule: the swap once
MATCHES = ResyncConfig(nodes=32, resume=(), levels=False)  # chains only where the tail holds the root


def test_a_swapped_word_proposes_the_rest_of_the_tail_below_the_correction() -> None:
    tail = OfflineTail((50, 7, 8, 9), SWAP)  # 50 was rejected; the target wrote another token instead

    lookup = tail.lookup(root=60)

    assert lookup.tree.tokens == (7, 8, 9)
    assert lookup.tree.is_chain
    assert lookup.origin == (1, 2, 3)


def test_every_tail_position_holding_the_root_proposes_the_tail_after_it_as_one_trie() -> None:
    tail = OfflineTail((50, 3, 4, 5, 3, 4, 6), MATCHES)

    lookup = tail.lookup(root=3)

    assert lookup.tree.tokens == (4, 5, 3, 4, 6, 6)  # 3 -> 4 shared by both chains, then they part
    assert lookup.tree.parents == (0, 1, 2, 3, 4, 1)
    assert lookup.origin == (2, 3, 4, 5, 6, 6)


def test_the_lookup_stays_within_its_node_budget_nearest_chain_first() -> None:
    tail = OfflineTail(tuple(range(40)), ResyncConfig(nodes=5, resume=(1,), levels=False))

    assert tail.lookup(root=99).tree.tokens == (1, 2, 3, 4, 5)
    assert tail.lookup(root=99, nodes=2).size == 2


def test_advance_spends_the_accepted_tail_tokens_and_drops_the_tail_after_patience_misses() -> None:
    tail = OfflineTail((50, 7, 8, 9, 10), ResyncConfig(patience=2, resume=(1,), hold=1))

    assert tail.advance([1, 2]) == 2
    assert (tail.cursor, tail.since, tail.misses) == (3, 0, 0)
    assert tail.starts(root=11) == [3]
    tail.advance([], proposed=False)  # nothing to propose: no miss
    assert tail.live and tail.misses == 0 and tail.since == 1
    assert tail.starts(root=11) == []  # one round after the correction: no swap chain
    tail.advance([])
    assert tail.live
    tail.advance([])
    assert not tail.live


def test_a_spent_tail_is_not_live() -> None:
    tail = OfflineTail((50, 7), SWAP)
    tail.advance([1])
    assert not tail.live


def test_grafted_keeps_a_node_of_both_trees_once_and_marks_the_lookup_ones() -> None:
    base = DraftTree((7, 4, 8), (0, 0, 1))  # the draft's: 7 -> 8, and 4
    tail = OfflineTail((50, 7, 9, 1), SWAP)  # below the correction: 7 -> 9 -> 1

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
    tail = OfflineTail((50, 6, 7, 8), MATCHES)

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
    grafted = OfflineTail((50, 7, 8), SWAP).grafted(DraftTree.chain([4]), root=60)
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
    assert resync_greedy(OfflineTail(offline, SWAP), reference, start=1).kept == 3
    assert resync_greedy(OfflineTail((50, 8, 9), SWAP), reference, start=1).kept == 0
    # held a round longer, the swap chain goes below 61 too: 2 3 4 5 all kept
    assert resync_greedy(OfflineTail(offline, ResyncConfig(resume=(1,), hold=2)), reference, start=1).kept == 4


def test_resync_greedy_counts_its_rounds_and_the_lookup_tokens_sent() -> None:
    trace = resync_greedy(OfflineTail((50, 2, 3, 4, 5), SWAP), [60, 61, 2, 3, 4, 5, 6], start=1)

    assert (trace.rounds, trace.nodes) == (3, 4 + 3)  # 2345 below 60; none below 61; 345 below 2: the end


def test_a_bad_config_names_the_cause() -> None:
    with pytest.raises(ConfigError, match="patience"):
        ResyncConfig(patience=0)
    with pytest.raises(ConfigError, match="hold"):
        ResyncConfig(hold=0)
    with pytest.raises(ConfigError, match="resume"):
        ResyncConfig(resume=(-1,))


def test_a_far_match_spends_only_its_own_tokens_and_the_ones_before_it_stay_proposed() -> None:
    tail = OfflineTail((50, 28, 1, 28, 2, 28, 3), MATCHES)

    assert tail.advance([6]) == 1  # the target took the last "28 3": 1 and 2 were not kept, yet
    assert tail.cursor == 7 and tail.live
    assert tail.starts(root=28, swap=False) == [1, 3]  # before the cursor, unspent
    assert tail.lookup(root=28).tree.tokens == (1, 28, 2, 28, 2, 28)  # each chain ends before a spent token
    tail.advance([2, 4])
    assert tail.lookup(root=28).size == 0  # every token after a 28 kept once


def test_a_chain_stops_at_a_spent_token() -> None:
    tail = OfflineTail((50, 5, 6, 7, 8), MATCHES)
    tail.advance([3])

    assert tail.lookup(root=5).tree.tokens == (6,)  # 7 was kept already


def test_after_a_correction_the_text_may_resume_at_the_replaced_token_or_past_the_next() -> None:
    """Resume 0: the target added a word (50 comes next); 1: swapped 50; 2: one word for 50 and 7."""
    tail = OfflineTail((50, 7, 8, 9), ResyncConfig(nodes=32, resume=(0, 1, 2), levels=False))

    lookup = tail.lookup(root=60)

    assert tail.starts(root=60) == [-1, 0, 1]
    assert lookup.tree.tokens == (50, 7, 8, 9, 7, 8, 9, 8, 9)
    assert lookup.origin == (0, 1, 2, 3, 1, 2, 3, 2, 3)
    assert OfflineTail((50, 7, 8, 9), SWAP).spent == {0}  # without resume 0 the rejected token stays out


def test_the_resume_chains_are_held_for_hold_rounds_after_a_correction() -> None:
    tail = OfflineTail((50, 7, 8, 9), ResyncConfig(resume=(1,), hold=3))

    for _ in range(3):
        assert tail.starts(root=61) == [0]
        tail.advance([])
    assert tail.starts(root=61) == []
    tail.advance([1])  # 7 kept: the target's next token replaced 8
    assert tail.starts(root=61) == [2]


def test_levels_share_the_budget_among_the_chains_first_tokens_first() -> None:
    config = ResyncConfig(nodes=4, resume=(1, 2), levels=True)
    tail = OfflineTail((50, 7, 8, 9, 10), config)

    lookup = tail.lookup(root=60)

    assert lookup.tree.tokens == (7, 8, 8, 9)  # 7 8 (swap) and 8 9 (one for two), not 7 8 9 10
    assert lookup.tree.parents == (0, 0, 1, 2)
    assert lookup.origin == (1, 2, 2, 3)


def test_by_default_a_word_the_target_added_is_no_loss() -> None:
    """The target writes 60 and then the offline text from its first (rejected) token on."""
    offline, reference = (50, 7, 8), [60, 50, 7, 8, 9]

    assert resync_greedy(OfflineTail(offline), reference, start=1).kept == 3  # 50 7 8 below 60
    assert resync_greedy(OfflineTail(offline, SWAP), reference, start=1).kept == 2  # the target's 50, then 7 8
