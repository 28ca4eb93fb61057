"""The incremental chain: grown in pieces it is the chain drafted in one go, it continues after
tokens chosen already, it keeps the proposal each token was drawn from, and the drafter drops it."""

from __future__ import annotations

import pytest
import torch

from drafts.drafters.base import DraftShape
from drafts.neural.chain import ChainPolicy
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

RUNNER = tiny_target_runner(tiny_llama())
PROMPT = random_tokens(12, seed=5)
GREEDY = ChainPolicy(SamplingConfig())
KINDS = ("moa", "eagle", "independent")


def observed(kind: str) -> NeuralDrafter:
    """A drafter that has observed the prompt but its last token (the root)."""
    drafter = NeuralDrafter(random_draft(kind, RUNNER, seed=2))
    drafter.begin(PROMPT)
    drafter.observe(PROMPT[:-1], committed(RUNNER, PROMPT[:-1], drafter.needs))
    return drafter


@pytest.mark.parametrize("kind", KINDS)
def test_a_chain_grown_in_pieces_is_the_chain_proposed_in_one_go(kind: str) -> None:
    drafter = observed(kind)

    chain = drafter.start_chain(PROMPT[-1], GREEDY, None)
    grown = chain.grow(3) + chain.grow(3)
    proposed = drafter.propose(PROMPT, DraftShape(gamma=6), SamplingConfig(), None)

    assert grown == list(proposed.tokens) and len(grown) == 6


@pytest.mark.parametrize("kind", KINDS)
def test_a_chain_started_from_tokens_chosen_already_continues_as_if_drafted_in_one_go(kind: str) -> None:
    drafter = observed(kind)
    whole = drafter.start_chain(PROMPT[-1], GREEDY, None).grow(7)

    chain = drafter.start_chain(PROMPT[-1], GREEDY, None, whole[:4])
    rest = chain.grow(3)

    assert chain.tokens == whole and rest == whole[4:]


def test_observing_drops_the_chain_and_moves_the_positions_on() -> None:
    drafter = observed("moa")
    chain = drafter.start_chain(PROMPT[-1], GREEDY, None)
    chain.grow(4)

    drafter.observe([PROMPT[-1]], committed(RUNNER, PROMPT).select(slice(len(PROMPT) - 1, None)))

    assert drafter.observed == len(PROMPT) and drafter.history == PROMPT
    assert drafter.chain is None and not chain.live
    with pytest.raises(AssertionError, match="dropped"):
        chain.grow(1)


def test_at_a_temperature_each_token_keeps_the_top_k_proposal_it_was_drawn_from() -> None:
    sampling = SamplingConfig(temperature=0.9, seed=1)
    drafter = observed("moa")

    chain = drafter.start_chain(PROMPT[-1], ChainPolicy(sampling, q_top_k=8), sampling.generator())
    tokens = chain.grow(5)

    sparse = chain.sparse_q(5)
    assert sparse is not None and sparse.indices.shape == (5, 8)
    q = sparse.dense(RUNNER.config.vocab_size)  # (5, V) what the verifier reads
    assert torch.allclose(q.sum(-1), torch.ones(5)) and all(q[i, t] > 0 for i, t in enumerate(tokens))
    assert all(int(torch.count_nonzero(row)) <= 8 for row in q)
    assert chain.tree().q_sparse is not None and chain.tree().q is None


def test_with_q_top_k_0_each_token_keeps_its_full_proposal_as_the_single_device_loop_verifies_it() -> None:
    sampling = SamplingConfig(temperature=0.9, seed=1)
    drafter = observed("eagle")

    chain = drafter.start_chain(PROMPT[-1], ChainPolicy(sampling), sampling.generator())
    tokens = chain.grow(4)

    tree = chain.tree()
    assert tree.q is not None and tree.q.shape == (4, RUNNER.config.vocab_size) and tree.q_sparse is None
    assert chain.sparse_q(4) is None  # nothing to send sparse: a network client sends these deterministic
    assert all(tree.q[i, t] > 0 for i, t in enumerate(tokens))


def test_a_confidence_floor_stalls_the_chain_but_offline_writing_goes_past_it() -> None:
    drafter = observed("independent")

    chain = drafter.start_chain(PROMPT[-1], ChainPolicy(SamplingConfig(), min_confidence=0.999), None)

    assert chain.grow(3) == [] and chain.stalled
    assert len(chain.grow(3, confident_only=False)) == 3



@pytest.mark.parametrize("sampling", [SamplingConfig(), SamplingConfig(temperature=1.0, seed=3)])
def test_a_banned_token_is_never_chosen(sampling: SamplingConfig) -> None:
    first = observed("moa").start_chain(PROMPT[-1], ChainPolicy(sampling), sampling.generator()).grow(1)[0]
    banning = observed("moa").start_chain(PROMPT[-1], ChainPolicy(sampling), sampling.generator())

    assert banning.grow(1, False, {first}) != [first]


def test_after_a_banned_token_the_chain_goes_on_from_the_one_chosen_instead() -> None:
    first = observed("eagle").start_chain(PROMPT[-1], GREEDY, None).grow(1)[0]
    banning = observed("eagle").start_chain(PROMPT[-1], GREEDY, None)
    chosen = banning.grow(1, False, {first})[0]

    replayed = observed("eagle").start_chain(PROMPT[-1], GREEDY, None, [chosen])

    assert banning.grow(3) == replayed.grow(3)
