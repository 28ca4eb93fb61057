"""Training conversations: the ShareGPT train split (never the held-out 200) or a ShareGPT-style
JSON / JSONL file, gzipped or not (such as the target's own answers of ``drafts.data.regenerate``
and ``drafts.data.target_answers``, kept as ``drafts/data/generated/*.jsonl.gz``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from drafts.data.conversations import Conversation
from drafts.data.sharegpt import clean_turns, has_exchange, load_sharegpt
from drafts.errors import DatasetError


def load_training_conversations(spec: str) -> list[Conversation]:
    if spec == "sharegpt":
        return load_sharegpt("train")
    path = Path(spec)
    if not path.is_file():
        raise DatasetError(
            f"training data {spec} does not exist; use --data sharegpt or a ShareGPT-style JSON/JSONL file"
        )
    rows = _read_rows(path)
    conversations = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        turns = clean_turns(row.get("conversations"))
        if has_exchange(turns):
            conversations.append(Conversation(str(row.get("id", i)), turns))
    if not conversations:
        raise DatasetError(f"{path} has no usable conversations; rows need a 'conversations' list of human/gpt turns")
    return conversations


def _read_rows(path: Path) -> list[object]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as file:
            text = file.read()
    else:
        text = path.read_text(encoding="utf-8")
    if path.name.removesuffix(".gz").endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: not valid JSON ({exc}); fix the file or convert it to JSONL") from exc
        return data if isinstance(data, list) else [data]
    rows = []
    lines = text.split("\n")  # not splitlines(): JSON strings may hold U+2028, which it splits on
    last = len(lines) - (1 if lines[-1] == "" else 0)
    for n, line in enumerate(lines, start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if n == last:
                    break  # a torn last line of a file still being written
                raise DatasetError(f"{path} line {n}: not valid JSON ({exc})") from exc
    return rows
