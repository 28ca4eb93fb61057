"""A store that cannot be written says where and how to fix it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.store import ConversationStore, StoreError


def test_a_directory_that_cannot_be_made_names_the_path_and_the_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be")
    path = blocker / "chats.sqlite3"
    with pytest.raises(StoreError, match="MOA_CHAT_DATA") as caught:
        ConversationStore.open(path)
    assert str(path) in str(caught.value)
    assert caught.value.path == path


def test_a_full_disk_is_a_store_error_and_the_store_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    with ConversationStore.open(path) as store:
        chat = store.create()
        pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
        store._conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk full" (SQLITE_FULL)
        with pytest.raises(StoreError, match="free some disk space") as caught:
            store.add_message(chat.id, "user", "x" * 100_000)
        assert str(path) in str(caught.value)
        assert store.load(chat.id).messages == []  # rolled back whole
        store._conn.execute("PRAGMA max_page_count = 1073741823")
        store.add_message(chat.id, "user", "room again")
        assert [m.content for m in store.load(chat.id).messages] == ["room again"]


def test_a_file_that_is_not_a_database_names_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    path.write_bytes(b"this is no SQLite file " * 100)
    with pytest.raises(StoreError, match="move .* aside|MOA_CHAT_DATA") as caught:
        ConversationStore.open(path)
    assert isinstance(caught.value.__cause__, sqlite3.Error)
