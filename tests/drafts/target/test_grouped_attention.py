"""The target's attention with masked CPU calls' grouped K/V heads left grouped: transformers' sdpa, bit for bit."""

from __future__ import annotations

import pytest
import torch
from transformers.integrations import sdpa_attention

from drafts.target.grouped_attention import NAME, attention_implementation
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree
from tests.tiny_targets import ARCHITECTURES, random_tokens, tiny_model, tiny_runner

PROMPT = random_tokens(11, seed=1)  # longer than the tiny sliding window
TREE = DraftTree((3, 9, 12, 40, 5, 22, 33, 1), (0, 0, 1, 1, 2, 2, 3, 5))
CHAIN = DraftTree.chain([4, 50, 8])


def runners(architecture: str) -> tuple[TargetRunner, TargetRunner]:
    """The same tiny model twice: on transformers' sdpa, and on the grouped attention."""
    plain, grouped = tiny_runner(tiny_model(architecture)), tiny_runner(tiny_model(architecture))
    plain.model.set_attn_implementation("sdpa")
    grouped.model.set_attn_implementation(attention_implementation())
    return plain, grouped


def logits_of(runner: TargetRunner, tree: DraftTree | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(prefill logits (P, V), then the logits of one tree or one-token step (n, V)) from a fresh session."""
    session = runner.new_session()
    prefill = runner.extend(session, PROMPT)
    runner.commit(session)
    return prefill, runner.extend(session, tree.input_ids(7) if tree else [7], tree=tree)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_trees_chains_steps_and_prefills_give_sdpas_bits(architecture: str) -> None:
    plain, grouped = runners(architecture)
    assert grouped.model.config._attn_implementation == NAME
    for tree in (TREE, CHAIN, None):
        for a, b in zip(logits_of(plain, tree), logits_of(grouped, tree), strict=True):
            assert torch.equal(a, b)


def test_a_tree_verify_no_longer_repeats_the_kv_heads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: under a tree's mask transformers' sdpa copies K/V to every query head; this does not."""
    plain, grouped = runners("llama")
    repeats: list[int] = []
    real = sdpa_attention.repeat_kv
    monkeypatch.setattr(sdpa_attention, "repeat_kv", lambda x, n: repeats.append(n) or real(x, n))
    logits_of(plain, TREE)
    assert repeats  # transformers' sdpa repeats under the mask
    repeats.clear()
    logits_of(grouped, TREE)
    assert repeats == []
