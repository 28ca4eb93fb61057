"""The store's schema version and migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.store import ConversationStore, StoreError
from app.store.schema import VERSION


def test_a_new_store_is_at_the_current_version(tmp_path: Path) -> None:
    with ConversationStore.open(tmp_path / "c.sqlite3") as store:
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == VERSION


def test_reopening_keeps_the_data_and_the_version(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    with ConversationStore.open(path) as store:
        chat = store.create(title="kept")
    with ConversationStore.open(path) as store:
        assert store.load(chat.id).title == "kept"
        assert store._conn.execute("PRAGMA user_version").fetchone()[0] == VERSION


def test_a_store_from_a_newer_moa_chat_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer moa-chat.*upgrade moa-chat, or set MOA_CHAT_DATA"):
        ConversationStore.open(path)
