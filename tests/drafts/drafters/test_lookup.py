from __future__ import annotations

import pytest

from drafts.drafters.base import DraftShape
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.sampling import SamplingConfig


def test_proposes_what_followed_the_latest_earlier_match() -> None:
    #          [1 2 3] 9 9 [1 2 3] 7 8 [1 2 3]   <- the last 3-gram occurs twice before
    context = [1, 2, 3, 9, 9, 1, 2, 3, 7, 8, 1, 2, 3]

    assert PromptLookupDrafter().lookup(context, 4) == [7, 8, 1, 2]


def test_a_longer_ngram_match_is_preferred_to_a_more_recent_shorter_one() -> None:
    context = [5, 6, 7, 8, 1, 7, 9, 5, 6, 7]  # [5 6 7] at 0; [7] alone most recently at 5

    assert PromptLookupDrafter(max_ngram=3).lookup(context, 4) == [8, 1, 7, 9]
    assert PromptLookupDrafter(max_ngram=1).lookup(context, 4) == [9, 5, 6, 7]


def test_the_proposal_stops_at_the_end_of_the_context() -> None:
    assert PromptLookupDrafter().lookup([1, 2, 3, 1, 2], 4) == [3, 1, 2]


def test_no_match_gives_an_empty_chain() -> None:
    tree = PromptLookupDrafter().propose([1, 2, 3, 4, 5], DraftShape(gamma=4), SamplingConfig(), None)

    assert tree.size == 0 and tree.is_chain


def test_a_match_shorter_than_min_ngram_is_ignored() -> None:
    context = [4, 1, 5, 6, 1]  # only the 1-gram [1] recurs

    assert PromptLookupDrafter(min_ngram=1).lookup(context, 2) == [5, 6]
    assert PromptLookupDrafter(min_ngram=2).lookup(context, 2) == []


@pytest.mark.parametrize("context", [[], [7]])
def test_a_context_too_short_to_repeat_gives_nothing(context: list[int]) -> None:
    assert PromptLookupDrafter().lookup(context, 3) == []


def test_gamma_zero_proposes_nothing() -> None:
    assert PromptLookupDrafter().lookup([1, 2, 1, 2], 0) == []


def test_propose_returns_a_deterministic_chain_of_gamma_tokens() -> None:
    context = [1, 2, 3, 4, 5, 6, 1, 2]

    tree = PromptLookupDrafter().propose(context, DraftShape(gamma=3), SamplingConfig(), None)

    assert tree.tokens == (3, 4, 5)
    assert tree.is_chain and tree.q is None


def test_prompt_lookup_needs_no_target_activations() -> None:
    assert PromptLookupDrafter.needs.empty
