"""The converted-GGUF cache is keyed by content: a moved or copied file hits, a changed one misses."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from drafts.locations import converted_models_dir
from drafts.target.gguf_cache import SAMPLE_BLOCKS, SAMPLE_BYTES, content_key, converted

SIZE = SAMPLE_BLOCKS * SAMPLE_BYTES + 12_345  # large enough that the key samples blocks


class Converter:
    """Writes a stand-in conversion (a config.json naming its source's full hash) and counts its calls."""

    def __init__(self) -> None:
        self.sources: list[Path] = []

    def __call__(self, gguf: Path, out: Path) -> None:
        self.sources.append(gguf)
        out.mkdir(parents=True)
        (out / "config.json").write_text(hashlib.sha256(gguf.read_bytes()).hexdigest())


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MOA_CHAT_CACHE", str(tmp_path / "cache"))
    return converted_models_dir()


def gguf(directory: Path, seed: int = 0, name: str = "model.Q4.gguf") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(hashlib.shake_256(str(seed).encode()).digest(SIZE))
    return path


def test_a_copy_elsewhere_with_another_mtime_uses_the_first_conversion(tmp_path: Path) -> None:
    convert, first = Converter(), gguf(tmp_path / "unpacked-1")
    copy = tmp_path / "unpacked-2" / first.name
    copy.parent.mkdir()
    shutil.copyfile(first, copy)
    os.utime(copy, ns=(first.stat().st_mtime_ns + 10**9, first.stat().st_mtime_ns + 10**9))

    assert converted(copy, convert) == converted(first, convert)
    assert convert.sources == [copy]


def test_a_moved_file_uses_its_conversion(tmp_path: Path) -> None:
    convert, path = Converter(), gguf(tmp_path / "a")
    out = converted(path, convert)
    moved = tmp_path / "b" / path.name
    moved.parent.mkdir()
    path.rename(moved)

    assert converted(moved, convert) == out
    assert len(convert.sources) == 1


@pytest.mark.parametrize("where", ["first byte", "last byte", "middle block", "appended"])
def test_a_changed_file_is_converted_again(tmp_path: Path, where: str) -> None:
    convert, path = Converter(), gguf(tmp_path)
    before = converted(path, convert)
    data = bytearray(path.read_bytes())
    if where == "appended":
        data += b"\0"
    else:
        index = {"first byte": 0, "last byte": -1, "middle block": SIZE // 2}[where]
        data[index] ^= 0xFF
    path.write_bytes(bytes(data))

    after = converted(path, convert)

    assert after != before and len(convert.sources) == 2
    assert (after / "config.json").read_text() == hashlib.sha256(bytes(data)).hexdigest()


def test_a_small_file_is_hashed_whole(tmp_path: Path) -> None:
    path = tmp_path / "small.gguf"
    path.write_bytes(b"GGUF" + bytes(100))
    key = content_key(path)
    path.write_bytes(b"GGUF" + bytes(99) + b"\1")

    assert content_key(path) != key


def test_an_entry_of_the_path_keyed_cache_is_adopted_by_content_and_left_in_place(tmp_path: Path, cache: Path) -> None:
    path = gguf(tmp_path)
    stat = path.stat()
    old_key = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    legacy = cache / f"{path.stem}-{old_key}"
    Converter()(path, legacy)
    convert = Converter()

    adopted = converted(path, convert)
    copy = tmp_path / "elsewhere" / path.name
    copy.parent.mkdir()
    shutil.copy2(path, copy)

    assert converted(copy, convert) == adopted  # found by content from now on
    assert convert.sources == []
    assert (adopted / "config.json").read_text() == (legacy / "config.json").read_text()
    assert (legacy / "config.json").is_file()  # an older version still finds its entry


def test_a_miss_announces_the_conversion_and_a_hit_does_not(tmp_path: Path) -> None:
    path, announced = gguf(tmp_path), []

    converted(path, Converter(), lambda: announced.append("converting"))
    converted(path, Converter(), lambda: announced.append("converting"))

    assert announced == ["converting"]
    assert not list(converted_models_dir().glob("*.partial-*"))  # the temporary directory became the entry
