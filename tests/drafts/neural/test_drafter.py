"""Trained drafts (randomly initialised) behind the Drafter interface on a tiny random Llama.

Whatever a draft proposes, speculative decoding at temperature 0 must give plain decoding's
tokens, for chains and EAGLE-2 trees, with the full or a reduced draft vocabulary. At T > 0 a
chain carries the proposal distribution q of every drafted token over the target's vocabulary.

Random drafts almost never agree with a random target, so the paths that commit accepted
tokens run on a second pair: a *predictable* target (its layers silenced and its LM head tied
to its embeddings, so it repeats one token) and *agreeable* drafts (their residual branches
scaled down, so they predict that token too) which get every drafted token accepted.
"""

from __future__ import annotations

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.speculative import generate
from drafts.drafters.base import DraftShape
from drafts.eagle.model import EagleDraft
from drafts.neural.base import NeuralDraft
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.factory import KINDS
from drafts.sampling import SamplingConfig, logits_to_probs
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

MAX_NEW = 24
PROMPT = random_tokens(12, seed=8)
SHAPES = {"chain": DraftShape(gamma=4), "tree": DraftShape.parse_tree("3,2,6")}
REDUCED = torch.arange(0, 64, 2)  # a 32-token draft vocabulary: the even target ids


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


@pytest.fixture(scope="module")
def predictable_runner() -> TargetRunner:
    return predictable_target()


def predictable_target() -> TargetRunner:
    """The tiny Llama with its layers silenced and its LM head tied to its embeddings: it repeats one token."""
    model = tiny_llama(seed=0)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.lm_head.weight.copy_(model.model.embed_tokens.weight)
    return tiny_target_runner(model)


def agreeable(draft: NeuralDraft) -> NeuralDraft:
    """The draft with its residual branches scaled by 0.1 (EAGLE's fc passing the embedding on):
    it predicts the token it reads, the predictable target's choice, and still reads its context."""
    with torch.no_grad():
        for name, p in draft.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                p.mul_(0.1)
        if isinstance(draft, EagleDraft):
            hidden = draft.cfg.hidden
            draft.fc.weight[:, :hidden] = torch.eye(hidden)
            draft.fc.weight[:, hidden:].mul_(0.1)
    return draft


DRAFTS = ("random", "agreeable")


def target_and_draft(
    drafts: str, kind: str, random_target: TargetRunner, predictable: TargetRunner
) -> tuple[TargetRunner, NeuralDraft]:
    """A random draft on the random target, or an agreeable one on the predictable target."""
    if drafts == "random":
        return random_target, random_draft(kind, random_target, seed=5)
    return predictable, agreeable(random_draft(kind, predictable, seed=5))


@pytest.fixture(scope="module")
def reference(runner: TargetRunner) -> list[int]:
    return generate_autoregressive(runner, PROMPT, DecodeConfig(MAX_NEW)).tokens


@pytest.mark.parametrize("vocab", ["full", "reduced"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_at_temperature_zero_speculative_decoding_gives_the_autoregressive_tokens(
    runner: TargetRunner, reference: list[int], kind: str, shape: str, vocab: str
) -> None:
    drafter = NeuralDrafter(random_draft(kind, runner, seed=5, d2t=REDUCED if vocab == "reduced" else None))

    spec = generate(runner, drafter, PROMPT, DecodeConfig(MAX_NEW, SamplingConfig(), SHAPES[shape]))

    assert len(reference) == MAX_NEW
    assert spec.tokens == reference
    budget = SHAPES[shape].tree_total if SHAPES[shape].is_tree else SHAPES[shape].gamma
    assert all(0 < event.proposed <= budget for event in spec.draft_rounds)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_agreeable_drafts_are_accepted_and_still_give_the_autoregressive_tokens(
    predictable_runner: TargetRunner, kind: str, shape: str
) -> None:
    drafter = NeuralDrafter(agreeable(random_draft(kind, predictable_runner, seed=5)))
    config = DecodeConfig(MAX_NEW, SamplingConfig(), SHAPES[shape])
    ar = generate_autoregressive(predictable_runner, PROMPT, config)

    spec = generate(predictable_runner, drafter, PROMPT, config)

    assert spec.tokens == ar.tokens
    accepted = [len(event.accepted) for event in spec.draft_rounds]
    assert accepted[0] == SHAPES[shape].gamma  # a whole chain, or a whole root-to-leaf path
    assert spec.target_forwards < ar.target_forwards


@pytest.mark.parametrize("drafts", DRAFTS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_after_a_generation_the_draft_holds_what_observing_the_whole_text_at_once_gives(
    runner: TargetRunner, predictable_runner: TargetRunner, kind: str, shape: str, drafts: str
) -> None:
    target, draft = target_and_draft(drafts, kind, runner, predictable_runner)
    config = DecodeConfig(MAX_NEW, SamplingConfig(), SHAPES[shape])
    spec = generate(target, NeuralDrafter(draft), PROMPT, config)
    text = PROMPT + [token for event in spec.rounds for token in event.tokens]  # the last token: the root
    fresh = target_and_draft(drafts, kind, runner, predictable_runner)[1]
    fresh.reset()
    fresh.observe(text[:-1], 0, committed(target, text[:-1], fresh.needs))

    root, position = torch.tensor(text[-1:]), torch.tensor([len(text) - 1])
    incremental, _ = draft.step(root, position, None, draft.initial_state())
    expected, _ = fresh.step(root, position, None, fresh.initial_state())

    assert torch.allclose(incremental, expected, atol=1e-4)


def prepared(runner: TargetRunner, kind: str, d2t: torch.Tensor | None) -> NeuralDrafter:
    """A drafter that has observed the prompt (the root is the next token)."""
    drafter = NeuralDrafter(random_draft(kind, runner, seed=6, d2t=d2t))
    drafter.begin(PROMPT)
    drafter.observe(PROMPT, committed(runner, PROMPT, drafter.needs), next_token=3)
    return drafter


@pytest.mark.parametrize("vocab", ["full", "reduced"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_sampled_chain_carries_q_rows_that_sum_to_one_over_the_target_vocabulary(
    runner: TargetRunner, kind: str, vocab: str
) -> None:
    d2t = REDUCED if vocab == "reduced" else None
    drafter = prepared(runner, kind, d2t)
    cfg = SamplingConfig(temperature=0.8, seed=0)

    tree = drafter.propose(PROMPT + [3], DraftShape(gamma=4), cfg, cfg.generator())

    V = runner.config.vocab_size
    assert tree.is_chain and tree.size == 4
    assert tree.q is not None and tree.q.shape == (4, V)
    assert torch.allclose(tree.q.sum(dim=-1), torch.ones(4), atol=1e-5)
    assert (tree.q[torch.arange(4), torch.tensor(tree.tokens)] > 0).all()  # each token was drawn from its row
    if d2t is not None:
        outside = torch.ones(V, dtype=torch.bool)
        outside[d2t] = False
        assert (tree.q[:, outside] == 0).all()
        assert set(tree.tokens) <= set(d2t.tolist())


@pytest.mark.parametrize("kind", KINDS)
def test_the_first_q_row_is_the_drafts_distribution_after_the_root(runner: TargetRunner, kind: str) -> None:
    drafter = prepared(runner, kind, REDUCED)
    cfg = SamplingConfig(temperature=0.8, seed=0)
    model = drafter.model
    logits, _ = model.step(torch.tensor([3]), torch.tensor([len(PROMPT)]), None, model.initial_state())
    model.end_round()

    tree = drafter.propose(PROMPT + [3], DraftShape(gamma=2), cfg, cfg.generator())

    assert tree.q is not None
    assert torch.allclose(tree.q[0], model.parts.to_full_vocab(logits_to_probs(logits[0], cfg)), atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_a_greedy_chain_follows_the_drafts_argmax(runner: TargetRunner, kind: str) -> None:
    drafter = prepared(runner, kind, None)
    model, token, state, expected = drafter.model, 3, drafter.model.initial_state(), []
    for depth in range(3):
        logits, state = model.step(torch.tensor([token]), torch.tensor([len(PROMPT) + depth]), None, state)
        token = int(logits[0].argmax())
        expected.append(token)
    model.end_round()

    tree = drafter.propose(PROMPT + [3], DraftShape(gamma=3), SamplingConfig(), None)

    assert list(tree.tokens) == expected and tree.q is None


def top_probabilities(drafter: NeuralDrafter, gamma: int) -> list[float]:
    """The draft's top probability at each depth of its greedy chain after the root 3."""
    model, token, state, tops = drafter.model, 3, drafter.model.initial_state(), []
    for depth in range(gamma):
        logits, state = model.step(torch.tensor([token]), torch.tensor([len(PROMPT) + depth]), None, state)
        tops.append(float(torch.softmax(logits[0].float(), -1).max()))
        token = int(logits[0].argmax())
    model.end_round()
    return tops


@pytest.mark.parametrize("kind", KINDS)
def test_a_chain_with_a_confidence_floor_stops_where_the_drafts_top_probability_falls_below_it(
    runner: TargetRunner, kind: str
) -> None:
    drafter = prepared(runner, kind, None)
    tops = top_probabilities(drafter, 4)
    floor = sorted(tops)[1]  # the two least confident depths are cut; the chain stops at the first of them
    expected = next(depth for depth, top in enumerate(tops) if top < floor) if min(tops) < floor else 4

    tree = drafter.propose(PROMPT + [3], DraftShape(gamma=4, min_confidence=floor), SamplingConfig(), None)
    sampled_cfg = SamplingConfig(temperature=0.8, seed=0)
    sampled = drafter.propose(
        PROMPT + [3], DraftShape(gamma=4, min_confidence=0.999), sampled_cfg, sampled_cfg.generator()
    )

    assert tree.size == expected < 4
    assert sampled.size == 0 and sampled.q is None  # nothing that confident: the round is a plain step


@pytest.mark.parametrize("temperature", [0.0, 0.8])
@pytest.mark.parametrize("kind", KINDS)
def test_decoding_with_a_confidence_floor_is_unchanged_at_t0_and_runs_at_t1(
    runner: TargetRunner, reference: list[int], kind: str, temperature: float
) -> None:
    drafter = NeuralDrafter(random_draft(kind, runner, seed=5))
    sampling = SamplingConfig(temperature=temperature, seed=1)
    config = DecodeConfig(MAX_NEW, sampling, DraftShape(gamma=4, min_confidence=0.15))

    spec = generate(runner, drafter, PROMPT, config)

    assert len(spec.tokens) == MAX_NEW
    if temperature == 0.0:
        assert spec.tokens == reference
    assert any(event.proposed < 4 for event in spec.draft_rounds)  # some chains were cut short
