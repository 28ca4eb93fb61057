"""A fan (the root's top-k tokens, a greedy chain below each) over the trained drafts (random weights), tiny Llama."""

from __future__ import annotations

import pytest
import torch

from drafts.neural.base import NeuralDraft
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.factory import KINDS
from drafts.neural.fan import fan_tree
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

PROMPT = random_tokens(10, seed=9)
ROOT = 4


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


@pytest.fixture(scope="module", params=KINDS)
def draft(request: pytest.FixtureRequest, runner: TargetRunner) -> NeuralDraft:
    model = random_draft(request.param, runner, seed=7)
    model.reset()
    model.observe(PROMPT, 0, committed(runner, PROMPT, model.needs))
    return model


def fan(model: NeuralDraft, width: int, depth: int) -> DraftTree:
    try:
        return fan_tree(model, ROOT, len(PROMPT), width, depth)
    finally:
        model.end_round()


def root_ranking(model: NeuralDraft) -> list[int]:
    """The draft's next tokens after the root, best first (target ids)."""
    logits, _ = model.step(torch.tensor([ROOT]), torch.tensor([len(PROMPT)]), None, model.initial_state())
    model.end_round()
    return model.parts.to_target_ids(logits[0].argsort(descending=True)).tolist()


def greedy_chain_after(model: NeuralDraft, first: int, depth: int) -> list[int]:
    """``first``, then the draft's greedy tokens, drafted alone below the root (a plain chain)."""
    state, token, out = model.initial_state(), ROOT, []
    for d in range(depth):
        logits, state = model.step(torch.tensor([token]), torch.tensor([len(PROMPT) + d]), None, state)
        token = first if d == 0 else int(model.parts.to_target_ids(logits[0].argmax())[()])
        out.append(token)
    model.end_round()
    return out


def chains(tree: DraftTree) -> list[list[int]]:
    """Each root-to-leaf path of ``tree``, in the order of its first-level nodes."""
    paths = []
    for node in tree.children(0):
        path = [tree.tokens[node - 1]]
        while children := tree.children(node):
            (node,) = children
            path.append(tree.tokens[node - 1])
        paths.append(path)
    return paths


def test_a_fan_of_one_is_the_greedy_chain(draft: NeuralDraft) -> None:
    tree = fan(draft, 1, 4)
    assert tree.is_chain and list(tree.tokens) == greedy_chain_after(draft, root_ranking(draft)[0], 4)


def test_each_chain_starts_at_one_of_the_roots_best_tokens_and_goes_on_as_if_drafted_alone(draft: NeuralDraft) -> None:
    tree = fan(draft, 3, 4)
    paths = chains(tree)
    assert [p[0] for p in paths] == root_ranking(draft)[:3]
    assert paths == [greedy_chain_after(draft, p[0], 4) for p in paths]
    assert tree.size == 12 and max(tree.depths) == 4 and tree.q is None


def test_the_drafter_fans_below_its_observed_tokens_and_keeps_only_them(runner: TargetRunner) -> None:
    drafter = NeuralDrafter(random_draft("moa", runner, seed=7))
    drafter.begin(PROMPT)
    drafter.observe(PROMPT, committed(runner, PROMPT, drafter.needs))
    first = drafter.fan(ROOT, 2, 3)
    assert drafter.fan(ROOT, 2, 3) == first  # the scratch tokens of the first fan were dropped
    assert first == fan(drafter.model, 2, 3)
