"""Loading a draft for inference never imports the training package (checked in a fresh process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from drafts.neural.kinds import KIND_NAMES
from drafts.training.checkpoint import save_draft
from tests.drafts.neural.test_kinds import shipped_checkpoints
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner

ROOT = Path(__file__).resolve().parents[3]

# Every inference entry point that loads a checkpoint: the loader itself, the drafter registry,
# the remote client's draft, the local engine and the verifier's MoA compressor.
ENTRY_POINTS = (
    "drafts.neural.checkpoint",
    "drafts.drafters.registry",
    "app.engine.client_draft",
    "app.engine.local_models",
    "server_stub.backend.draft_memory",
)


def run_fresh(body: str) -> str:
    """``body`` in a new interpreter (a clean module table); returns what it printed last."""
    imports = "".join(f"import {m}\n" for m in ENTRY_POINTS)
    code = "import sys\n" + imports + textwrap.dedent(body)
    code += "\nprint(sorted(m for m in sys.modules if m.startswith('drafts.training')))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_inference_entry_points_import_no_training() -> None:
    assert run_fresh("") == "[]"


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_loading_a_checkpoint_of_each_kind_imports_no_training(kind: str, tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    save_draft(tmp_path, random_draft(kind, runner, seed=1), runner.fingerprint, {"tokens": 1})

    printed = run_fresh(
        f"""
        from pathlib import Path
        from drafts.drafters import registry
        from drafts.neural.checkpoint import load_draft
        from tests.tiny_drafts import tiny_llama, tiny_target_runner
        runner = tiny_target_runner(tiny_llama(seed=0))
        model = load_draft(Path({str(tmp_path)!r}), runner)
        assert model.kind == {kind!r}, model.kind
        registry.set_checkpoint({kind!r}, Path({str(tmp_path)!r}))
        drafter = registry.drafter_spec({kind!r}).build(runner, [])
        print(type(drafter).__name__, model.kind)
        """
    )

    assert printed == "[]"


@pytest.mark.integration
@pytest.mark.parametrize("path", shipped_checkpoints(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_loading_a_shipped_checkpoint_imports_no_training(path: Path) -> None:
    printed = run_fresh(
        f"""
        from pathlib import Path
        from app.engine.client_draft import ClientDraft
        draft = ClientDraft.load(Path({str(path)!r}), device="cpu")
        assert draft.drafter.model.kind == {path.name!r}
        """
    )

    assert printed == "[]"
