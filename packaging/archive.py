"""Pack a built folder as ``dist/moa-chat-VERSION-PLATFORM.tar.gz`` with a ``.sha256`` beside it.

Usage: python packaging/archive.py dist/moa-chat. VERSION is the project's, PLATFORM names the
system and machine it was built on (linux-x86_64, macos-arm64, windows-amd64).
"""

from __future__ import annotations

import hashlib
import platform
import sys
import tarfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = {"linux": "linux", "darwin": "macos", "win32": "windows"}


def version() -> str:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def platform_name() -> str:
    system = SYSTEMS.get(sys.platform, sys.platform)
    return f"{system}-{platform.machine().lower()}"


def pack(folder: Path) -> Path:
    """The archive of ``folder`` (one top-level folder inside), written beside it."""
    archive = folder.parent / f"{folder.name}-{version()}-{platform_name()}.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=6) as tar:
        tar.add(folder, arcname=folder.name)
    return archive


def write_checksum(archive: Path) -> Path:
    """``ARCHIVE.sha256`` in the format ``sha256sum -c`` reads."""
    digest = hashlib.sha256()
    with open(archive, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    checksum = archive.with_name(archive.name + ".sha256")
    checksum.write_text(f"{digest.hexdigest()}  {archive.name}\n")
    return checksum


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python packaging/archive.py dist/moa-chat (a folder packaging/build made)", file=sys.stderr)
        return 2
    archive = pack(Path(args[0]))
    checksum = write_checksum(archive)
    print(f"{archive} ({archive.stat().st_size / 2**20:.0f} MiB), checksum in {checksum.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
