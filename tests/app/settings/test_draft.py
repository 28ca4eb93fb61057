"""What --draft resolves to, checked from the files alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.settings.draft import DraftError, resolve_draft, target_name
from drafts.errors import CheckpointError
from drafts.locations import shipped_checkpoint


def checkpoint(tmp_path: Path, kind: str = "moa", trained_for: str = "SmolLM2-135M-Instruct") -> Path:
    path = tmp_path / f"{kind}-draft"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"format": 1, "kind": kind, "target": {"name": trained_for}}))
    return path


@pytest.mark.parametrize("kind", ["moa", "eagle", "independent"])
def test_a_kind_resolves_to_the_checkpoint_shipped_for_the_target(kind: str) -> None:
    choice = resolve_draft(kind, "smollm2")
    assert choice.kind == kind and choice.checkpoint == shipped_checkpoint("SmolLM2-135M-Instruct", kind)
    assert (choice.server_half is not None) == (kind == "moa")  # only MoA runs a part on the verifier


def test_none_is_no_draft() -> None:
    choice = resolve_draft("none", "smollm2")
    assert choice.kind is None and choice.checkpoint is None and choice.server_half is None


def test_a_checkpoint_directory_gives_its_kind(tmp_path: Path) -> None:
    path = checkpoint(tmp_path, "eagle")
    assert resolve_draft(str(path), "smollm2").kind == "eagle"


def test_a_directory_that_is_no_checkpoint_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(DraftError, match="no draft checkpoint at .*moa-train.*also takes moa, eagle, independent"):
        resolve_draft(str(tmp_path), "smollm2")


@pytest.mark.parametrize(
    ("config", "refusal"),
    [
        ('{"format": 1, "kind": "mo', "not valid JSON.*retrain or restore"),
        ('{"format": 1, "kind": "medusa", "target": {"name": "SmolLM2-135M-Instruct"}}', "kind 'medusa'.*loads moa"),
        ('{"format": 1, "kind": "moa"}', "names no target.*retrain it with moa-train"),
        ("[1, 2]", "no JSON object"),
    ],
)
def test_a_bad_checkpoint_config_is_refused_as_when_it_loads(tmp_path: Path, config: str, refusal: str) -> None:
    (tmp_path / "config.json").write_text(config)

    with pytest.raises(DraftError, match=f"--draft {tmp_path}: .*{refusal}") as refused:
        resolve_draft(str(tmp_path), "smollm2")
    assert isinstance(refused.value.__cause__, CheckpointError)  # the loader's own refusal, one reader


def test_a_draft_for_another_target_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = checkpoint(tmp_path, trained_for="Qwen2.5-0.5B")
    with pytest.raises(DraftError, match="trained for Qwen2.5-0.5B, but the target is SmolLM2.*matching --target"):
        resolve_draft(str(path), "smollm2")


def test_no_shipped_draft_for_another_target() -> None:
    with pytest.raises(DraftError, match="no moa draft is shipped for target '/m/q.gguf'.*moa-train"):
        resolve_draft("moa", "/m/q.gguf")


def test_target_names() -> None:
    assert target_name("smollm2") == "SmolLM2-135M-Instruct"
    assert target_name("/models/Qwen-0.5B.gguf") == "Qwen-0.5B"
    assert target_name("/models/my-target/") == "my-target"
