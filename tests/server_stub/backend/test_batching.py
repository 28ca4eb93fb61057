"""The batched forward pass: every row matches its session's own pass, whatever the padding."""

from __future__ import annotations

import pytest
import torch

from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree
from server_stub.backend.batching import BatchRow, cache_layers, commit_row, forward_batch
from tests.tiny_targets import ARCHITECTURES, random_tokens, tiny_model, tiny_runner

TREES = [
    DraftTree((5, 6, 7), (0, 1, 1)),  # a branching tree
    DraftTree.chain([1, 2, 3, 4, 5]),  # the longest row: no padding of the new tokens
    DraftTree.chain([]),  # the root alone
]


def prefilled(runner: TargetRunner, tokens: list[int]) -> TargetSession:
    session = runner.new_session()
    if tokens:
        runner.extend(session, tokens)
        runner.commit(session)
    return session


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_each_rows_logits_match_its_sessions_own_forward_pass(architecture: str) -> None:
    runner = tiny_runner(tiny_model(architecture))
    prompts = [random_tokens(7, 1), random_tokens(12, 2), []]  # uneven pasts, one empty
    rows = [BatchRow(prefilled(runner, p), 10 + i, t) for i, (p, t) in enumerate(zip(prompts, TREES, strict=True))]

    batch = forward_batch(runner, rows)

    for row, prompt, logits in zip(rows, prompts, batch.logits, strict=True):
        alone = prefilled(runner, prompt)
        expected = runner.extend(alone, row.tree.input_ids(row.root_token), tree=row.tree)
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=0)


def test_committing_a_row_appends_only_the_kept_positions_to_its_session() -> None:
    runner = tiny_runner(tiny_model("llama"))
    prompt = random_tokens(6, 3)
    session, empty = prefilled(runner, prompt), runner.new_session()
    tree = DraftTree((5, 6, 7), (0, 0, 2))
    batch = forward_batch(runner, [BatchRow(session, 9, tree), BatchRow(empty, 4, DraftTree.chain([8]))])

    commit_row(batch, 0, session, [0, 2, 3])  # the root, then node 2 and its child 3: node 1 skipped
    commit_row(batch, 1, empty, [0])

    assert session.length == 9 and cache_layers(session.cache)[0].keys.shape[-2] == 9
    assert empty.length == 1 and cache_layers(empty.cache)[0].keys.shape[-2] == 1
    reference = prefilled(runner, prompt + [9, 6, 7])
    torch.testing.assert_close(session.tail_kv(9), reference.tail_kv(9), atol=1e-5, rtol=0)


def test_the_hidden_states_asked_for_come_back_per_row() -> None:
    runner = tiny_runner(tiny_model("qwen2"))
    rows = [BatchRow(prefilled(runner, random_tokens(4, 5)), 1, DraftTree.chain([2, 3]))]

    batch = forward_batch(runner, rows, hidden_layers=[0, runner.num_layers])

    assert set(batch.hidden[0]) == {0, runner.num_layers}
    assert batch.hidden[0][0].shape == (3, runner.config.hidden_size)
