"""The cache of GGUF targets converted to safetensors, keyed by the file's content, not its path.

transformers dequantises a GGUF on every load (~30 s for SmolLM2, ~80 s on a busy machine), so
the converted weights are saved once under :func:`drafts.locations.converted_models_dir`. The key
is the file's size and a SHA-256 of 17 evenly spaced 1 MiB blocks (the first and the last
included: the header with its metadata, the tensor data throughout), so the same GGUF at another
path or with another mtime (a freshly unpacked desktop binary, a reinstalled package, a copy)
finds its conversion, and a changed file does not. Reading 17 MiB takes ~0.06 s where a full
SHA-256 takes 0.33 s for SmolLM2's 98 MB and 0.87 s for Gemma's 253 MB (measured on a loaded
2-core EPYC); a same-size edit that touches none of the sampled blocks would go unnoticed, which
no re-quantisation or fine-tune of a model does.

Entries written by earlier versions (keyed on the path, size and mtime) are still found when the
file is where and as it was, and filed under the content key as hard links (no copy): they are
never moved or deleted, as an older binary may still use them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from drafts.locations import converted_models_dir

SAMPLE_BLOCKS = 17  # blocks read for the key, evenly spaced from the first byte to the last
SAMPLE_BYTES = 2**20  # each block's length
KEY_VERSION = "gguf-content-1"  # change when the key's recipe changes


def content_key(gguf: Path) -> str:
    """A short hash of ``gguf``'s size and sampled content (see the module docstring)."""
    size = gguf.stat().st_size
    digest = hashlib.sha256(f"{KEY_VERSION}:{size}".encode())
    with open(gguf, "rb") as file:
        for offset in _sample_offsets(size):
            file.seek(offset)
            digest.update(file.read(SAMPLE_BYTES))
    return digest.hexdigest()[:16]


def converted(gguf: Path, convert: Callable[[Path, Path], None], on_convert: Callable[[], None] | None = None) -> Path:
    """The directory holding ``gguf`` converted; on a miss ``on_convert()``, then ``convert(gguf, directory)``."""
    out = converted_models_dir() / f"{gguf.stem}-{content_key(gguf)}"
    if _complete(out):
        return out
    legacy = converted_models_dir() / f"{gguf.stem}-{_legacy_key(gguf)}"
    if _complete(legacy):
        return _adopt(legacy, out)
    if on_convert is not None:
        on_convert()
    tmp = out.with_name(f"{out.name}.partial-{os.getpid()}")  # per process: two may convert at once (demo)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        convert(gguf, tmp)
        tmp.rename(out)
    except OSError:
        if not _complete(out):
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # another process finished the same conversion first
    return out


def _adopt(legacy: Path, out: Path) -> Path:
    """File a path-keyed entry under its content key too, as hard links (no copy, no move); else use it as it is."""
    tmp = out.with_name(f"{out.name}.partial-{os.getpid()}")
    try:
        shutil.copytree(legacy, tmp, copy_function=os.link)
        tmp.rename(out)
    except OSError:  # no hard links here (another file system, Windows FAT), or another process adopted it first
        shutil.rmtree(tmp, ignore_errors=True)
        return out if _complete(out) else legacy
    return out


def _sample_offsets(size: int) -> list[int]:
    if size <= SAMPLE_BLOCKS * SAMPLE_BYTES:
        return list(range(0, max(size, 1), SAMPLE_BYTES))  # small enough: every byte
    last = size - SAMPLE_BYTES
    return [last * i // (SAMPLE_BLOCKS - 1) for i in range(SAMPLE_BLOCKS)]


def _legacy_key(gguf: Path) -> str:
    """The key of versions before content keys: the resolved path, size and mtime."""
    stat = gguf.stat()
    return hashlib.sha256(f"{gguf.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]


def _complete(directory: Path) -> bool:
    return (directory / "config.json").exists()
