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


def fan(model: NeuralDraft, width: int, depth: int, lead: int = 1) -> DraftTree:
    try:
        return fan_tree(model, ROOT, len(PROMPT), width, depth, lead)
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


def greedy_after(model: NeuralDraft, path: list[int], depth: int) -> tuple[list[int], float]:
    """``path``, then the draft's greedy tokens to ``depth`` (drafted alone below the root), and the
    draft's summed log-probability of ``path``."""
    state, token, out, logp = model.initial_state(), ROOT, [], 0.0
    for d in range(depth):
        logits, state = model.step(torch.tensor([token]), torch.tensor([len(PROMPT) + d]), None, state)
        token = path[d] if d < len(path) else int(model.parts.to_target_ids(logits[0].argmax())[()])
        if d < len(path):
            ids = model.parts.to_target_ids(torch.arange(logits.shape[-1])).tolist()
            logp += float(torch.log_softmax(logits[0].float(), dim=-1)[ids.index(token)])
        out.append(token)
    model.end_round()
    return out, logp


def paths(tree: DraftTree) -> list[list[int]]:
    """Each root-to-leaf path of ``tree`` (leaves in index order)."""
    leaves = [n for n in range(1, tree.size + 1) if not tree.children(n)]
    out = []
    for leaf in leaves:
        path, node = [], leaf
        while node:
            path.insert(0, tree.tokens[node - 1])
            node = tree.parents[node - 1]
        out.append(path)
    return out


def test_a_fan_led_two_levels_holds_the_likeliest_pairs_each_with_its_greedy_chain(draft: NeuralDraft) -> None:
    width, depth = 3, 4
    tree = fan(draft, width, depth, lead=2)
    firsts = root_ranking(draft)[:width]
    seconds = root_ranking_after(draft, firsts)
    pairs = sorted(((greedy_after(draft, [a, b], 2)[1], [a, b]) for a in firsts for b in seconds[a]), reverse=True)
    full = [p for p in paths(tree) if len(p) == depth]

    assert [p[:2] for p in full] == [pair for _, pair in pairs[:width]]  # best pair first
    assert full == [greedy_after(draft, p[:2], depth)[0] for p in full]
    assert [tree.tokens[n - 1] for n in tree.children(0)] == firsts  # every top guess stays a first-level node
    assert tree.size == width * depth and tree.q is None


def test_a_fan_led_one_level_is_the_plain_fan_and_a_lead_deeper_than_the_fan_is_cut(draft: NeuralDraft) -> None:
    assert fan(draft, 3, 4, lead=1) == fan(draft, 3, 4)
    assert fan(draft, 2, 2, lead=5) == fan(draft, 2, 2, lead=2)


def root_ranking_after(model: NeuralDraft, firsts: list[int]) -> dict[int, list[int]]:
    """Per first token: the draft's next tokens after (root, it), all of them, best first."""
    out = {}
    for first in firsts:
        state = model.initial_state()
        _, state = model.step(torch.tensor([ROOT]), torch.tensor([len(PROMPT)]), None, state)
        logits, _ = model.step(torch.tensor([first]), torch.tensor([len(PROMPT) + 1]), None, state)
        model.end_round()
        out[first] = model.parts.to_target_ids(logits[0].argsort(descending=True)).tolist()
    return out


def test_the_drafter_fans_below_its_observed_tokens_and_keeps_only_them(runner: TargetRunner) -> None:
    drafter = NeuralDrafter(random_draft("moa", runner, seed=7))
    drafter.begin(PROMPT)
    drafter.observe(PROMPT, committed(runner, PROMPT, drafter.needs))
    first = drafter.fan(ROOT, 2, 3)
    assert drafter.fan(ROOT, 2, 3) == first  # the scratch tokens of the first fan were dropped
    assert first == fan(drafter.model, 2, 3)
