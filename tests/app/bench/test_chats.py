"""Multi-turn bench chats from a JSONL file: rows with raw line separators, bad lines named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.bench.chats import load_chats
from drafts.errors import DatasetError


def test_a_line_separator_inside_a_turn_keeps_the_chat_whole(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text(json.dumps({"id": "c1", "turns": ["one\u2028two", "three"]}, ensure_ascii=False) + "\n")

    chats = load_chats(str(path), limit=5, turns=2)

    assert len(chats) == 1
    assert chats[0].users[0].content == "one\u2028two"


def test_a_malformed_line_is_named_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text(json.dumps({"id": "c1", "turns": ["hi"]}) + "\n{not json\n")

    with pytest.raises(DatasetError, match="line 2"):
        load_chats(str(path), limit=5, turns=1)
