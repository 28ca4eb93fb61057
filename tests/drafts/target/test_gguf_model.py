"""GGUFModel: the bundled SmolLM2 GGUF through llama.cpp, reusing its cached prefix across contexts."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from drafts.errors import ConfigError, ModelLoadError
from drafts.locations import smollm2_gguf
from drafts.sampling import SamplingConfig
from drafts.target.gguf_model import GGUFModel

VOCAB = 49152  # SmolLM2's
PROMPT = [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3717, 282]


@pytest.fixture(scope="module")
def model() -> GGUFModel:
    pytest.importorskip("llama_cpp")
    return GGUFModel(smollm2_gguf(), VOCAB, n_ctx=64)


@pytest.mark.integration
def test_logits_after_a_branched_context_match_a_fresh_model(model: GGUFModel) -> None:
    branch = [*PROMPT[:6], 504, 17]
    model.logits_after([*PROMPT, 42, 9520])  # the cache now holds a longer, different context
    reused = model.logits_after(branch)
    fresh = GGUFModel(smollm2_gguf(), VOCAB, n_ctx=64)
    try:
        np.testing.assert_allclose(reused, fresh.logits_after(branch), atol=1e-4)
    finally:
        fresh.close()
    assert reused.shape == (VOCAB,)


@pytest.mark.integration
def test_a_greedy_next_token_is_the_argmax_and_a_repeated_context_gives_the_same_one(model: GGUFModel) -> None:
    token = model.next_token(PROMPT, SamplingConfig(), None)
    assert token == int(np.argmax(model.logits_after(PROMPT)))
    assert model.next_token(PROMPT, SamplingConfig(), None) == token


@pytest.mark.integration
def test_a_context_that_fills_the_window_is_refused(model: GGUFModel) -> None:
    with pytest.raises(ConfigError, match="64 tokens exceed the offline model's context of 64"):
        model.logits_after(list(range(64)))


@pytest.mark.integration
def test_a_gguf_of_another_vocabulary_is_refused_with_both_sizes() -> None:
    pytest.importorskip("llama_cpp")
    with pytest.raises(ConfigError, match=f"vocabulary of {VOCAB} tokens, the target 1000.*own family"):
        GGUFModel(smollm2_gguf(), 1000, n_ctx=64)


def test_without_llama_cpp_the_error_says_how_to_install_it_or_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # what Python does for a package that is not there
    with pytest.raises(ModelLoadError, match="pip install llama-cpp-python \\(or drop the gguf method\\)"):
        GGUFModel(smollm2_gguf(), VOCAB)
