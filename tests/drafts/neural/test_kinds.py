"""The table of draft kinds: each kind declared once, matching its model, and what ships."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from drafts.drafters.registry import drafter_spec
from drafts.errors import ConfigError
from drafts.neural.checkpoint import read_meta
from drafts.neural.kinds import DRAFT_KINDS, KIND_NAMES, compressed_kinds, draft_kind

SHIPPED = Path(__file__).resolve().parents[3] / "drafts" / "checkpoints"


def shipped_checkpoints() -> list[Path]:
    return sorted(config.parent for config in SHIPPED.glob("*/*/config.json"))


def test_each_kind_is_declared_once() -> None:
    names = [kind.name for kind in DRAFT_KINDS]

    assert len(names) == len(set(names))
    assert tuple(names) == KIND_NAMES


@pytest.mark.parametrize("kind", DRAFT_KINDS, ids=lambda k: k.name)
def test_a_declared_kind_names_its_own_config_and_model(kind: object) -> None:
    assert isinstance(kind, type(DRAFT_KINDS[0]))
    assert kind.model_type().kind == kind.name  # type: ignore[attr-defined]
    assert dataclasses.is_dataclass(kind.config_type())
    assert draft_kind(kind.name) is kind


@pytest.mark.parametrize("kind", DRAFT_KINDS, ids=lambda k: k.name)
def test_a_kind_the_server_compresses_has_a_compressing_part(kind: object) -> None:
    model = kind.model_type()  # type: ignore[attr-defined]

    assert hasattr(model, "compress") == kind.server_compresses  # type: ignore[attr-defined]
    assert (kind.name in compressed_kinds()) == kind.server_compresses  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_every_declared_kind_is_a_trained_drafting_method(kind: str) -> None:
    spec = drafter_spec(kind)

    assert spec.trained and spec.description == draft_kind(kind).description


def test_an_unknown_kind_lists_the_declared_ones() -> None:
    with pytest.raises(ConfigError, match="unknown draft kind 'medusa'; choose from " + ", ".join(KIND_NAMES)):
        draft_kind("medusa")


def test_every_shipped_checkpoint_names_a_declared_kind() -> None:
    checkpoints = shipped_checkpoints()

    assert checkpoints, f"no checkpoints under {SHIPPED}"
    for path in checkpoints:
        kind = read_meta(path)["kind"]
        assert kind in KIND_NAMES and kind == path.name, path


def test_every_declared_kind_ships_for_smollm2() -> None:
    shipped = {json.loads((p / "config.json").read_text())["kind"] for p in shipped_checkpoints()}

    assert set(KIND_NAMES) <= shipped


def test_reading_the_table_imports_no_model_and_no_torch() -> None:
    code = (
        "import sys, drafts.neural.kinds, app.settings.draft, app.settings.options\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch' or m.startswith("
        "('drafts.moa', 'drafts.eagle', 'drafts.independent', 'drafts.training'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout

    assert out.strip() == "[]"
