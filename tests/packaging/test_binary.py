"""The desktop binary: ``packaging/build`` makes ``dist/moa-chat/``, whose launchers run alone.

Builds the folder unless one newer than every shipped source is there, then runs the frozen
``moa-chat`` as a user would: ``--version``, and a headless answer from the demo (whose verifier
is the frozen ``moa-server`` beside it). At T=0 the answer must be the one the app gives when run
from the source tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from app.engine.events import StopReason
from drafts.decoding.events import TokenSource

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist" / "moa-chat"
SUFFIX = ".exe" if sys.platform == "win32" else ""
LAUNCHER = DIST / f"moa-chat{SUFFIX}"
SHIPPED = ("app", "drafts", "server_stub", "packaging", "pyproject.toml")
BUILD_TIMEOUT_S = 3600
ANSWER = ["--headless", "--demo", "--prompt", "Say hi", "--json", "--temperature", "0", "--max-tokens", "24"]
LABELS = {source.value for source in TokenSource} | {"repaired"}


def newest_source_mtime() -> float:
    """When a file the bundle is built from last changed (results and caches do not count)."""
    files = [ROOT / "pyproject.toml"]
    for folder in SHIPPED[:-1]:
        files += [p for p in (ROOT / folder).rglob("*") if p.is_file() and not ignored(p)]
    return max(p.stat().st_mtime for p in files)


def ignored(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return "__pycache__" in parts or parts[:3] == ("drafts", "bench", "results")


@pytest.fixture(scope="module")
def launcher() -> Path:
    """The frozen ``moa-chat``, rebuilt with ``packaging/build`` when stale or missing."""
    if not LAUNCHER.exists() or LAUNCHER.stat().st_mtime < newest_source_mtime():
        subprocess.run(["bash", str(ROOT / "packaging" / "build")], cwd=ROOT, check=True, timeout=BUILD_TIMEOUT_S)
    assert LAUNCHER.exists(), f"packaging/build did not leave {LAUNCHER}"
    return LAUNCHER


@pytest.fixture
def user_dirs(tmp_path: Path) -> dict[str, str]:
    """The environment of a user whose settings and conversations live in a fresh folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(MOA_CHAT_DATA=str(tmp_path / "data"), MOA_CHAT_CONFIG=str(tmp_path / "config.toml"))
    return env


def run_json(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    cwd = Path(env["MOA_CHAT_CONFIG"]).parent  # not the repository: the bundle must hold what it loads
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_binary_prints_the_project_version(launcher: Path) -> None:
    with open(ROOT / "pyproject.toml", "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    done = subprocess.run([str(launcher), "--version"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"moa-chat {version}"


def test_the_verifier_sits_beside_the_app(launcher: Path) -> None:
    server = launcher.with_name(f"moa-server{SUFFIX}")
    done = subprocess.run([str(server), "--help"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "moa-server" in done.stdout


def test_the_headless_demo_answers_as_the_source_tree_does(launcher: Path, user_dirs: dict[str, str]) -> None:
    frozen = run_json([str(launcher), *ANSWER], user_dirs)
    assert frozen["text"].strip()
    assert frozen["tokens"] == len(frozen["token_ids"]) == len(frozen["provenance"]) > 0
    assert set(frozen["provenance"]) <= LABELS
    assert frozen["stop"] in {reason.value for reason in StopReason}
    assert frozen["stats"]["tokens_per_s"] > 0
    source = run_json([sys.executable, "-m", "app", *ANSWER], {**user_dirs, "PYTHONPATH": str(ROOT)})
    assert frozen["token_ids"] == source["token_ids"]
    assert frozen["text"] == source["text"]
