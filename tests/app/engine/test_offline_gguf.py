"""GGUFContinuation: the engine's offline writer over the bundled SmolLM2 GGUF (drafts' GGUFModel)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from app.engine.offline import GGUFContinuation
from drafts.errors import ModelLoadError
from drafts.locations import smollm2_gguf
from drafts.sampling import SamplingConfig
from drafts.target.gguf_model import GGUFModel

VOCAB = 49152  # SmolLM2's
PROMPT = [1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3717, 282]


async def write(continuation: GGUFContinuation, context: list[int], n: int) -> list[int]:
    """Up to ``n`` greedy tokens after ``context``: fewer where the continuation cannot go on."""
    tokens: list[int] = []
    for _ in range(n):
        token = await continuation.next_token([*context, *tokens], SamplingConfig())
        if token is None:
            break
        tokens.append(token)
    return tokens


@pytest.mark.integration
def test_after_following_the_context_it_writes_the_models_own_greedy_tokens() -> None:
    pytest.importorskip("llama_cpp")
    continuation = GGUFContinuation(smollm2_gguf(), VOCAB, n_ctx=64)
    reference = GGUFModel(smollm2_gguf(), VOCAB, n_ctx=64)
    try:
        continuation.follow(PROMPT[:8])
        continuation.follow(PROMPT)  # a newer context supersedes a follow not yet run
        written = asyncio.run(write(continuation, PROMPT, 6))
        expected: list[int] = []
        for _ in range(6):
            expected.append(reference.next_token([*PROMPT, *expected], SamplingConfig(), None))
        assert written == expected and continuation.name == f"gguf:{smollm2_gguf().name}"
    finally:
        continuation.close()
        reference.close()


@pytest.mark.integration
def test_at_the_end_of_its_window_it_stops_instead_of_failing() -> None:
    pytest.importorskip("llama_cpp")
    continuation = GGUFContinuation(smollm2_gguf(), VOCAB, n_ctx=16)
    try:
        continuation.follow(list(range(16)))  # ignored: nothing to prepare past the window
        assert len(asyncio.run(write(continuation, list(range(15)), 3))) == 1  # the 16th token fills it
    finally:
        continuation.close()


def test_without_llama_cpp_the_error_names_the_option_that_goes_on_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # what Python does for a package that is not there
    with pytest.raises(ModelLoadError, match="pip install llama-cpp-python \\(or --offline-model none"):
        GGUFContinuation(smollm2_gguf(), VOCAB)
