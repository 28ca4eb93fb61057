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


def test_a_line_separator_inside_an_answer_does_not_split_its_row(tmp_path: Path) -> None:
    # json.dumps(ensure_ascii=False) keeps U+2028 raw; str.splitlines() would cut the row in two.
    row = {"id": "s", "conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "x\u2028y"}]}
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")

    conversations = load_training_conversations(str(path))

    assert [conv.id for conv in conversations] == ["s"]
    assert len(conversations[0].turns) == 2
