"""The server-side MoA part: loaded from a checkpoint, identified by its weights, equal to the draft's own compress."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from drafts.moa.model import MoADraft
from drafts.training.checkpoint import draft_id, save_draft
from server_stub.backend import draft_memory
from server_stub.backend.draft_memory import MemoryCompressor
from server_stub.errors import DraftUnsupportedError
from tests.tiny_drafts import committed, random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens


def test_memory_vectors_equal_the_drafts_own_compression_of_the_kv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(draft_memory, "CHUNK_TOKENS", 8)
    runner = tiny_target_runner(tiny_llama())
    draft = random_draft("moa", runner, seed=3)
    save_draft(tmp_path, draft, runner.fingerprint, {})
    kv = committed(runner, random_tokens(21, seed=1)).kv  # three chunks, the last one short
    assert kv is not None

    compressor = MemoryCompressor.load(tmp_path, runner)

    assert isinstance(compressor.draft, MoADraft)
    with torch.inference_mode():
        expected = compressor.draft.compress(kv[None])[0]
    torch.testing.assert_close(compressor(kv), expected, atol=1e-5, rtol=0)
    assert compressor(kv[:0]).shape == (0, runner.config.hidden_size)


def test_the_draft_id_names_the_kind_and_changes_with_the_weights(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama())
    save_draft(tmp_path / "a", random_draft("moa", runner, seed=1), runner.fingerprint, {})
    save_draft(tmp_path / "b", random_draft("moa", runner, seed=2), runner.fingerprint, {})

    first = draft_id(tmp_path / "a")

    assert first.startswith("moa-") and first == draft_id(tmp_path / "a")
    assert first != draft_id(tmp_path / "b")
    assert MemoryCompressor.load(tmp_path / "a", runner).draft_id == first


def test_a_checkpoint_without_a_server_part_is_refused(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama())
    save_draft(tmp_path, random_draft("eagle", runner), runner.fingerprint, {})

    with pytest.raises(DraftUnsupportedError, match="MoA checkpoint"):
        MemoryCompressor.load(tmp_path, runner)
