"""Training conversations from files: JSONL and gzipped JSONL read alike."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from drafts.training.data import load_training_conversations

ROWS = [
    {"id": "a", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]},
    {"id": "b", "conversations": [{"from": "human", "value": "no answer"}]},
    {"id": "c", "conversations": [{"from": "human", "value": "2+2?"}, {"from": "gpt", "value": "4"}]},
]


def test_a_gzipped_jsonl_file_gives_the_same_conversations_as_the_plain_one(tmp_path: Path) -> None:
    text = "".join(json.dumps(row) + "\n" for row in ROWS)
    plain, packed = tmp_path / "answers.jsonl", tmp_path / "answers.jsonl.gz"
    plain.write_text(text, encoding="utf-8")
    with gzip.open(packed, "wt", encoding="utf-8") as file:
        file.write(text)

    conversations = load_training_conversations(str(packed))

    assert conversations == load_training_conversations(str(plain))
    assert [conv.id for conv in conversations] == ["a", "c"]
