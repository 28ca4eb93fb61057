"""packaging/archive.py: the archive's name, content and checksum (no build needed)."""

from __future__ import annotations

import hashlib
import importlib.util
import tarfile
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_archive() -> ModuleType:
    """packaging/ is not a Python package (its name is PyPI's `packaging`), so load the file."""
    spec = importlib.util.spec_from_file_location("moa_archive", ROOT / "packaging" / "archive.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_archive_is_named_by_version_and_platform_and_holds_the_folder(tmp_path: Path) -> None:
    archive = load_archive()
    folder = tmp_path / "moa-chat"
    (folder / "_internal").mkdir(parents=True)
    (folder / "moa-chat").write_text("launcher")
    (folder / "_internal" / "data.bin").write_bytes(b"\x00\x01")
    assert archive.main([str(folder)]) == 0
    with open(ROOT / "pyproject.toml", "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    [packed] = tmp_path.glob("*.tar.gz")
    assert packed.name == f"moa-chat-{version}-{archive.platform_name()}.tar.gz"
    with tarfile.open(packed) as tar:
        names = sorted(tar.getnames())
    assert names == ["moa-chat", "moa-chat/_internal", "moa-chat/_internal/data.bin", "moa-chat/moa-chat"]


def test_the_checksum_file_is_what_sha256sum_checks(tmp_path: Path) -> None:
    archive = load_archive()
    packed = tmp_path / "x.tar.gz"
    packed.write_bytes(b"some bytes")
    checksum = archive.write_checksum(packed)
    assert checksum.name == "x.tar.gz.sha256"
    assert checksum.read_text() == f"{hashlib.sha256(b'some bytes').hexdigest()}  x.tar.gz\n"


def test_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    assert load_archive().main([str(tmp_path / "absent")]) == 2
