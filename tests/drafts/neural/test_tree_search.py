"""EAGLE-2's dynamic tree over the trained drafts (random weights) on a tiny random Llama."""

from __future__ import annotations

import pytest
import torch

from drafts.drafters.base import DraftShape
from drafts.neural.base import NeuralDraft
from drafts.neural.factory import KINDS
from drafts.neural.tree_search import dynamic_tree
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

PROMPT = random_tokens(10, seed=9)
ROOT = 4
SHAPES = ["3,2,6", "4,3,10", "2,4,20", "1,5,3"]


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


@pytest.fixture(scope="module", params=KINDS)
def draft(request: pytest.FixtureRequest, runner: TargetRunner) -> NeuralDraft:
    model = random_draft(request.param, runner, seed=7)
    model.reset()
    model.observe(PROMPT, 0, committed(runner, PROMPT, model.needs))
    return model


def grow(model: NeuralDraft, shape: DraftShape) -> DraftTree:
    try:
        return dynamic_tree(model, ROOT, len(PROMPT), shape)
    finally:
        model.end_round()


def path_log_probability(model: NeuralDraft, tokens: list[int]) -> float:
    """The draft's cumulative log-probability of ``tokens`` after the root, drafted as a chain."""
    state, token, total = model.initial_state(), ROOT, 0.0
    for depth, next_token in enumerate(tokens):
        logits, state = model.step(torch.tensor([token]), torch.tensor([len(PROMPT) + depth]), None, state)
        total += float(torch.log_softmax(logits[0].float(), dim=-1)[next_token])
        token = next_token
    model.end_round()
    return total


def nodes_reachable_from_root(tree: DraftTree) -> set[int]:
    seen, frontier = {0}, [0]
    while frontier:
        children = tree.children(frontier.pop())
        seen.update(children)
        frontier.extend(children)
    return seen


@pytest.mark.parametrize("text", SHAPES)
def test_the_tree_keeps_at_most_total_nodes_all_connected_to_the_root(draft: NeuralDraft, text: str) -> None:
    shape = DraftShape.parse_tree(text)

    tree = grow(draft, shape)

    generated = shape.tree_top_k + (shape.tree_depth - 1) * shape.tree_top_k**2
    assert tree.size == min(shape.tree_total, generated)
    assert nodes_reachable_from_root(tree) == set(range(tree.size + 1))
    assert max(tree.depths) <= shape.tree_depth
    assert all(len(tree.children(node)) <= shape.tree_top_k for node in range(tree.size + 1))


def test_the_roots_first_child_is_the_drafts_greedy_token(draft: NeuralDraft) -> None:
    tree = grow(draft, DraftShape.parse_tree("3,2,6"))

    logits, _ = draft.step(torch.tensor([ROOT]), torch.tensor([len(PROMPT)]), None, draft.initial_state())
    draft.end_round()
    assert tree.tokens[tree.children(0)[0] - 1] == int(logits[0].argmax())


def test_every_node_scores_no_better_than_its_parent_and_siblings_come_best_first(draft: NeuralDraft) -> None:
    tree = grow(draft, DraftShape.parse_tree("4,3,10"))

    score = {0: 0.0}
    for node in range(1, tree.size + 1):
        score[node] = path_log_probability(draft, [tree.tokens[i - 1] for i in tree.path(node)])
    for node in range(1, tree.size + 1):
        assert score[node] <= score[tree.parents[node - 1]] + 1e-6
    for node in range(tree.size + 1):
        siblings = [score[child] for child in tree.children(node)]
        assert siblings == sorted(siblings, reverse=True)


def test_growing_a_tree_leaves_the_drafts_caches_as_they_were(draft: NeuralDraft) -> None:
    first = grow(draft, DraftShape.parse_tree("3,2,6"))

    again = grow(draft, DraftShape.parse_tree("3,2,6"))

    assert (again.tokens, again.parents) == (first.tokens, first.parents)
