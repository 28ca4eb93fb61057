"""The incremental draft chain: the same tokens as the one-shot drafter, and it survives adoption."""

from __future__ import annotations

import pytest
import torch

from app.engine.chain import DraftChain
from drafts.drafters.base import DraftShape
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

RUNNER = tiny_target_runner(tiny_llama())
PROMPT = random_tokens(12, seed=5)
GREEDY = SamplingConfig()


def observed_chain(kind: str) -> DraftChain:
    chain = DraftChain(random_draft(kind, RUNNER, seed=2), GREEDY, None)
    chain.reset()
    chain.observe(PROMPT[:-1], committed(RUNNER, PROMPT[:-1]))
    return chain


@pytest.mark.parametrize("kind", ["moa", "eagle", "independent"])
def test_a_grown_chain_equals_the_drafters_own_chain(kind: str) -> None:
    chain = observed_chain(kind)
    drafter = NeuralDrafter(chain.model)

    chain.restart(PROMPT[-1])
    grown = chain.grow(3) + chain.grow(3)
    chain.model.end_round()
    drafter._length = chain.observed
    proposed = drafter.propose(PROMPT, DraftShape(gamma=6), GREEDY, None)

    assert grown == list(proposed.tokens)


@pytest.mark.parametrize("kind", ["moa", "eagle", "independent"])
def test_an_adopted_chain_continues_as_if_it_had_been_drafted_in_one_go(kind: str) -> None:
    chain = observed_chain(kind)
    chain.restart(PROMPT[-1])
    whole = chain.grow(7)

    chain.adopt(PROMPT[-1], whole[:4], [])
    rest = chain.grow(3)

    assert chain.tokens == whole and rest == whole[4:]


def test_observing_drops_the_chain_and_moves_the_positions_on() -> None:
    chain = observed_chain("moa")
    chain.restart(PROMPT[-1])
    chain.grow(4)
    acts = committed(RUNNER, PROMPT)
    chain.observe([PROMPT[-1]], acts.select(slice(len(PROMPT) - 1, None)))

    assert chain.observed == len(PROMPT) and chain.tokens == [] and chain.root is None


def test_at_a_temperature_each_token_keeps_the_proposal_it_was_sampled_from() -> None:
    sampling = SamplingConfig(temperature=0.9, seed=1)
    chain = DraftChain(random_draft("moa", RUNNER, seed=2), sampling, sampling.generator())
    chain.reset()
    chain.observe(PROMPT[:-1], committed(RUNNER, PROMPT[:-1]))
    chain.restart(PROMPT[-1])
    tokens = chain.grow(5)

    sparse = chain.proposal_q(5)
    assert sparse is not None and sparse.indices.shape == (5, chain.q_top_k)
    q = sparse.dense(RUNNER.config.vocab_size)  # (5, V) what the verifier reads
    assert torch.allclose(q.sum(-1), torch.ones(5)) and all(q[i, t] > 0 for i, t in enumerate(tokens))
    assert all(int(torch.count_nonzero(row)) <= chain.q_top_k for row in q)
