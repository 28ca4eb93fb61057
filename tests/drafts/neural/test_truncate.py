"""Cutting a trained draft back to a prefix: it then drafts as if it had only ever observed the prefix.

A conversation's next turn shares a prefix with the previous one; the draft keeps that prefix
(its caches cut back, not rebuilt) and observes the new tokens after it.
"""

from __future__ import annotations

import pytest
import torch

from drafts.drafters.base import DraftShape, Rewindable
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.factory import KINDS
from drafts.sampling import SamplingConfig
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

FIRST = random_tokens(20, seed=21)  # the earlier turn, as observed in two commits
CUT = 9
SECOND = FIRST[:CUT] + random_tokens(7, seed=22)  # the next turn: the same first CUT tokens, then others


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


def observed(runner: TargetRunner, kind: str, tokens: list[int], splits: tuple[int, ...] = ()) -> NeuralDrafter:
    """A fresh drafter that observed ``tokens`` in commits ending at ``splits`` (then the rest)."""
    drafter = NeuralDrafter(random_draft(kind, runner, seed=3))
    acts = committed(runner, tokens, drafter.needs)
    drafter.begin(tokens)
    start = 0
    for end in (*splits, len(tokens)):
        drafter.observe(tokens[start:end], acts.select(slice(start, end)), 0)
        start = end
    return drafter


def draft_logits(drafter: NeuralDrafter, context: list[int]) -> torch.Tensor:
    root, position = torch.tensor(context[-1:]), torch.tensor([len(context) - 1])
    model = drafter.model
    logits, _ = model.step(root, position, None, model.initial_state())
    model.end_round()
    return logits


@pytest.mark.parametrize("kind", KINDS)
def test_a_draft_cut_back_and_fed_the_next_turn_drafts_as_one_that_observed_only_that_turn(
    runner: TargetRunner, kind: str
) -> None:
    drafter = observed(runner, kind, FIRST, splits=(13,))
    drafter.propose(FIRST + [5], DraftShape(gamma=3), SamplingConfig(), None)  # scratch tokens too
    acts = committed(runner, SECOND, drafter.needs)

    drafter.truncate(CUT)
    drafter.observe(SECOND[CUT:-1], acts.select(slice(CUT, len(SECOND) - 1)), SECOND[-1])

    fresh = observed(runner, kind, SECOND[:-1])
    assert torch.allclose(draft_logits(drafter, SECOND), draft_logits(fresh, SECOND), atol=1e-5)
    chain = DraftShape(gamma=4)
    cut_back = drafter.propose(SECOND, chain, SamplingConfig(), None)
    assert cut_back.tokens == fresh.propose(SECOND, chain, SamplingConfig(), None).tokens


@pytest.mark.parametrize("kind", KINDS)
def test_cutting_back_to_nothing_is_a_fresh_start(runner: TargetRunner, kind: str) -> None:
    drafter = observed(runner, kind, FIRST)
    acts = committed(runner, SECOND[:-1], drafter.needs)

    drafter.truncate(0)
    drafter.observe(SECOND[:-1], acts, SECOND[-1])

    fresh = observed(runner, kind, SECOND[:-1])
    assert torch.allclose(draft_logits(drafter, SECOND), draft_logits(fresh, SECOND), atol=1e-5)


def test_a_trained_drafter_is_rewindable_but_not_past_what_it_observed(runner: TargetRunner) -> None:
    drafter = observed(runner, "moa", FIRST)

    assert isinstance(drafter, Rewindable)
    with pytest.raises(ValueError, match="observed 20"):
        drafter.truncate(21)
