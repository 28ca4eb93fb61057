"""The inference contract every trained draft keeps (MoA, EAGLE, independent).

``step`` with a scratch mask drafts a whole tree level in one call: each new token must see the
committed context and its own ancestors only, exactly as if its root-to-leaf path had been
drafted alone as a chain. ``end_round`` must forget the round's scratch tokens.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from drafts.neural.base import NeuralDraft
from drafts.neural.factory import KINDS, default_config
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

PROMPT = random_tokens(9, seed=4)
ROOT = 11
# Scratch slot: token (parent slot). Level 1: the root; level 2: two children; level 3: three leaves.
#            0 [ROOT]
#          /         \
#      1 [20]       2 [40]
#      /    \          |
#  3 [21]  4 [22]   5 [41]
LEVELS = [([ROOT], [-1]), ([20, 40], [0, 0]), ([21, 22, 41], [1, 1, 2])]
PATHS = [[0, 1, 3], [0, 1, 4], [0, 2, 5]]  # every root-to-leaf path, as slots
ATOL = 1e-5


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


@pytest.fixture(scope="module", params=[*KINDS, "moa-tli2"])
def draft(request: pytest.FixtureRequest, runner: TargetRunner) -> NeuralDraft:
    """Every kind, and MoA reusing the target's last two layers (Target Layer Inference)."""
    kind, _, tli = request.param.partition("-tli")
    config = default_config(kind, runner, tli_layers=int(tli)) if tli else None
    model = random_draft(kind, runner, seed=2, config=config)
    model.reset()
    model.observe(PROMPT, 0, committed(runner, PROMPT, model.needs))
    return model


def tokens_by_slot() -> list[int]:
    return [token for tokens, _ in LEVELS for token in tokens]


def ancestors(slot: int) -> list[int]:
    parents = [parent for _, level_parents in LEVELS for parent in level_parents]
    chain = [slot]
    while parents[chain[-1]] >= 0:
        chain.append(parents[chain[-1]])
    return chain


def tree_logits(model: NeuralDraft) -> torch.Tensor:
    """Draft the tree level by level with scratch masks: (slots, Dv) logits."""
    position, rows, state_of = len(PROMPT), [], {-1: model.initial_state()}
    slot = 0
    for depth, (tokens, parents) in enumerate(LEVELS):
        slots = list(range(slot, slot + len(tokens)))
        mask = torch.zeros(len(tokens), slots[-1] + 1, dtype=torch.bool)
        for row, s in enumerate(slots):
            mask[row, ancestors(s)] = True
        state = gather([state_of[p] for p in parents])
        positions = torch.full((len(tokens),), position + depth)
        logits, out = model.step(torch.tensor(tokens), positions, None if depth == 0 else mask, state)
        rows.append(logits)
        for row, s in enumerate(slots):
            state_of[s] = None if out is None else out[row : row + 1]
        slot += len(tokens)
    model.end_round()
    return torch.cat(rows)


def gather(states: list[Any]) -> Any:
    return None if states[0] is None else torch.cat(states)


def chain_logits(model: NeuralDraft, tokens: list[int]) -> torch.Tensor:
    position, state, rows = len(PROMPT), model.initial_state(), []
    for depth, token in enumerate(tokens):
        logits, state = model.step(torch.tensor([token]), torch.tensor([position + depth]), None, state)
        rows.append(logits[0])
    model.end_round()
    return torch.stack(rows)


def test_a_tree_level_drafted_at_once_equals_each_root_to_leaf_path_drafted_alone(draft: NeuralDraft) -> None:
    tree = tree_logits(draft)

    tokens = tokens_by_slot()
    for path in PATHS:
        chain = chain_logits(draft, [tokens[s] for s in path])
        assert torch.allclose(tree[path], chain, atol=ATOL), f"{draft.kind}: path {path}"


def test_end_round_forgets_the_drafted_tokens(draft: NeuralDraft) -> None:
    first = chain_logits(draft, [ROOT, 20, 21])
    chain_logits(draft, [ROOT, 40, 41, 42, 43])  # a longer round in between

    again = chain_logits(draft, [ROOT, 20, 21])

    assert torch.equal(first, again)


def test_the_draft_vocabulary_is_the_target_vocabulary_by_default(draft: NeuralDraft, runner: TargetRunner) -> None:
    logits = chain_logits(draft, [ROOT])

    assert logits.shape == (1, runner.config.vocab_size)
    assert torch.isfinite(logits).all()
