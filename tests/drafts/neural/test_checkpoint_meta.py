"""A checkpoint's metadata, read without torch: the one reader for the loader and moa-chat's settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from drafts.errors import CheckpointError
from drafts.neural.checkpoint_meta import read_meta, trained_for
from tests.drafts.neural.test_kinds import shipped_checkpoints

ROOT = Path(__file__).resolve().parents[3]


def test_reading_a_checkpoints_metadata_imports_no_torch() -> None:
    path = shipped_checkpoints()[0]
    code = (
        "import sys\nfrom pathlib import Path\nfrom drafts.neural.checkpoint_meta import read_meta, trained_for\n"
        f"meta = read_meta(Path({str(path)!r}))\nprint(meta['kind'], trained_for(meta))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'safetensors', 'transformers')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)

    assert done.returncode == 0, done.stderr[-3000:]
    described, imported = done.stdout.strip().splitlines()
    kind, target = described.split()
    assert kind == path.name and target.lower() == path.parent.name  # shipped as <target>/<kind>/
    assert imported == "[]"


def test_the_loader_and_the_settings_read_metadata_through_the_same_function() -> None:
    from app.settings import draft as settings_draft
    from drafts.neural import checkpoint

    assert checkpoint.read_meta is read_meta
    assert settings_draft.read_meta is read_meta


def test_a_checkpoint_names_the_target_it_was_trained_for(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"format": 1, "kind": "eagle", "target": {"name": "T"}}))

    assert trained_for(read_meta(tmp_path)) == "T"


@pytest.mark.parametrize(
    ("config", "refusal"),
    [
        (None, "no draft checkpoint at .*moa-train"),
        (b"\xff\xfe", "unreadable or not valid JSON.*retrain or restore"),
        ('{"format": 2, "kind": "moa", "target": {"name": "T"}}', "format 2, this version reads 1"),
        ('{"format": 1, "kind": "moa", "target": "T"}', "names no target"),
    ],
)
def test_a_bad_config_is_refused_with_a_fix(tmp_path: Path, config: str | bytes | None, refusal: str) -> None:
    if isinstance(config, bytes):
        (tmp_path / "config.json").write_bytes(config)
    elif config is not None:
        (tmp_path / "config.json").write_text(config)

    with pytest.raises(CheckpointError, match=refusal):
        read_meta(tmp_path)
