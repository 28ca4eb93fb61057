"""EAGLE-2's dynamic tree over the trained drafts (random weights) on a tiny random Llama."""

from __future__ import annotations

import pytest
import torch

from drafts.drafters.base import DraftShape
from drafts.errors import ConfigError
from drafts.neural.base import NeuralDraft
from drafts.neural.factory import KINDS
from drafts.neural.tree_search import DEFAULT_SCORING, TreeNode, TreeScoring, dynamic_tree, grow, select
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


CALIBRATED = TreeScoring(slope=(1.3, 1.6), bias=(-0.2, -0.5))  # a shape of the fitted calibrations
RANKED = TreeScoring(rank_slope=(0.75, 1.0, 1.2), rank_bias=(0.2, -0.3, 0.4))  # a shape of the per-rank fits


def grow_tree(model: NeuralDraft, shape: DraftShape, scoring: TreeScoring = DEFAULT_SCORING) -> DraftTree:
    try:
        return dynamic_tree(model, ROOT, len(PROMPT), shape, scoring)
    finally:
        model.end_round()


def grow_nodes(model: NeuralDraft, shape: DraftShape, scoring: TreeScoring = DEFAULT_SCORING) -> list[TreeNode]:
    try:
        with torch.inference_mode():
            return grow(model, ROOT, len(PROMPT), shape, scoring)
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


def candidates(nodes: list[TreeNode]) -> list[tuple[tuple[int, ...], float]]:
    """Every node as (its path's tokens, log q), in a canonical order."""

    def path(i: int) -> tuple[int, ...]:
        return (*path(nodes[i].parent), nodes[i].token) if i >= 0 else ()

    return sorted((path(i), n.log_q) for i, n in enumerate(nodes))


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

    tree = grow_tree(draft, shape)

    generated = shape.tree_top_k + (shape.tree_depth - 1) * shape.tree_top_k**2
    assert tree.size == min(shape.tree_total, generated)
    assert nodes_reachable_from_root(tree) == set(range(tree.size + 1))
    assert max(tree.depths) <= shape.tree_depth
    assert all(len(tree.children(node)) <= shape.tree_top_k for node in range(tree.size + 1))


def test_the_roots_first_child_is_the_drafts_greedy_token(draft: NeuralDraft) -> None:
    tree = grow_tree(draft, DraftShape.parse_tree("3,2,6"))

    logits, _ = draft.step(torch.tensor([ROOT]), torch.tensor([len(PROMPT)]), None, draft.initial_state())
    draft.end_round()
    assert tree.tokens[tree.children(0)[0] - 1] == int(logits[0].argmax())


def test_every_node_scores_no_better_than_its_parent_and_siblings_come_best_first(draft: NeuralDraft) -> None:
    tree = grow_tree(draft, DraftShape.parse_tree("4,3,10"))

    score = {0: 0.0}
    for node in range(1, tree.size + 1):
        score[node] = path_log_probability(draft, [tree.tokens[i - 1] for i in tree.path(node)])
    for node in range(1, tree.size + 1):
        assert score[node] <= score[tree.parents[node - 1]] + 1e-6
    for node in range(tree.size + 1):
        siblings = [score[child] for child in tree.children(node)]
        assert siblings == sorted(siblings, reverse=True)


def test_growing_a_tree_leaves_the_drafts_caches_as_they_were(draft: NeuralDraft) -> None:
    first = grow_tree(draft, DraftShape.parse_tree("3,2,6"))

    again = grow_tree(draft, DraftShape.parse_tree("3,2,6"))

    assert (again.tokens, again.parents) == (first.tokens, first.parents)


def test_by_default_a_nodes_score_is_exactly_its_parents_plus_its_own_log_probability(draft: NeuralDraft) -> None:
    nodes = grow_nodes(draft, DraftShape.parse_tree("4,3,10"))

    for node in nodes:
        parent = nodes[node.parent].score if node.parent >= 0 else 0.0
        assert node.score == parent + node.log_q  # EAGLE-2's rule, bit for bit


@pytest.mark.parametrize("scoring", [CALIBRATED, RANKED], ids=["by-depth", "by-rank"])
def test_a_calibrated_scoring_changes_only_the_ranking_of_the_same_candidates(
    draft: NeuralDraft, scoring: TreeScoring
) -> None:
    shape = DraftShape.parse_tree("2,4,20")  # one expansion step: the same frontier under any scoring
    default, calibrated = grow_nodes(draft, shape), grow_nodes(draft, shape, scoring)

    assert candidates(default) == candidates(calibrated)  # (the frontier's order may differ)
    for node in calibrated:
        parent = calibrated[node.parent].score if node.parent >= 0 else 0.0
        assert node.score == pytest.approx(parent + scoring.term(node.log_q, node.depth, node.rank))


def test_a_nodes_rank_is_its_place_among_its_parents_children_by_q(draft: NeuralDraft) -> None:
    shape = DraftShape.parse_tree("3,4,10")

    nodes = grow_nodes(draft, shape)

    for parent in {n.parent for n in nodes}:
        children = [n for n in nodes if n.parent == parent]
        by_q = sorted(children, key=lambda n: -n.log_q)
        assert [n.rank for n in children] == list(range(shape.tree_top_k))
        assert [n.log_q for n in by_q] == [n.log_q for n in sorted(children, key=lambda n: n.rank)]


@pytest.mark.parametrize("scoring", [CALIBRATED, RANKED], ids=["by-depth", "by-rank"])
@pytest.mark.parametrize("text", SHAPES)
def test_a_calibrated_tree_is_still_a_subtree_of_at_most_total_nodes(
    draft: NeuralDraft, text: str, scoring: TreeScoring
) -> None:
    shape = DraftShape.parse_tree(text)

    nodes = grow_nodes(draft, shape, scoring)
    tree = select(nodes, shape.tree_total)

    assert all(n.score <= nodes[n.parent].score for n in nodes if n.parent >= 0)  # a child never above its parent
    assert tree.size == min(shape.tree_total, len(nodes))
    assert nodes_reachable_from_root(tree) == set(range(tree.size + 1))


def test_a_steep_depth_bias_keeps_every_first_level_candidate_before_any_deeper_one(draft: NeuralDraft) -> None:
    shape = DraftShape.parse_tree("3,4,6")

    tree = grow_tree(draft, shape, TreeScoring(bias=(-50.0,)))

    assert tree.depths[1:] == (1, 1, 1, 1, 2, 2)


def test_the_scoring_term_is_the_log_probability_by_default_and_never_positive_when_calibrated() -> None:
    assert TreeScoring().term(-0.37, 3) == -0.37
    assert CALIBRATED.term(-0.5, 1) == pytest.approx(1.3 * -0.5 - 0.2)
    assert CALIBRATED.term(-0.5, 5) == pytest.approx(1.6 * -0.5 - 0.5)  # the last depth's values repeat
    assert TreeScoring(bias=(0.3,)).term(-0.1, 1) == 0.0


def test_a_rank_scoring_scales_and_shifts_by_sibling_rank_the_last_rank_repeating() -> None:
    assert RANKED.term(-0.5, 1, rank=0) == pytest.approx(0.75 * -0.5 + 0.2)
    assert RANKED.term(-0.5, 4, rank=1) == pytest.approx(-0.5 - 0.3)
    assert RANKED.term(-2.0, 2, rank=7) == pytest.approx(1.2 * -2.0 + 0.4)  # ranks past the end use the last
    assert RANKED.term(-0.1, 1, rank=0) == 0.0  # never above 0
    both = TreeScoring(slope=(2.0,), bias=(-0.1,), rank_slope=(0.5,), rank_bias=(0.3,))
    assert both.term(-1.0, 1, rank=0) == pytest.approx(2.0 * 0.5 * -1.0 - 0.1 + 0.3)
    assert TreeScoring(rank_slope=(1.0,), rank_bias=(0.0,)).is_default


def test_a_scoring_parses_from_its_description_and_rejects_nonsense() -> None:
    assert TreeScoring.parse("default") == TreeScoring()
    assert TreeScoring.parse(CALIBRATED.describe()) == CALIBRATED
    assert TreeScoring.parse("slope=1.2,bias=-0.1") == TreeScoring((1.2,), (-0.1,))
    assert TreeScoring.parse(RANKED.describe()) == RANKED
    assert TreeScoring.parse("rank_bias=0.2/0") == TreeScoring(rank_bias=(0.2, 0.0))
    assert TreeScoring().describe() == "default"
    for bad in ("slope=1.2,gain=3", "slope=x", "slope=0", "slope=-1,bias=0", "rank_slope=0", "rank_bias="):
        with pytest.raises(ConfigError):
            TreeScoring.parse(bad)
