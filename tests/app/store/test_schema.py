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


def test_a_second_app_migrating_the_same_new_file_at_once_skips_the_steps_already_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two moa-chat processes opening a new store together: the second read version 0 before the
    first migrated; under the write lock it finds the steps done and skips them (it used to fail
    with "table conversations already exists")."""
    from app.store import schema

    path = tmp_path / "c.sqlite3"
    with ConversationStore.open(path) as store:  # the first app has migrated the file
        chat = store.create(title="first")
    real_version = schema.version
    calls: list[sqlite3.Connection] = []

    def stale_first_read(conn: sqlite3.Connection) -> int:
        calls.append(conn)
        return 0 if len(calls) == 1 else real_version(conn)  # the first read predates the other migration

    monkeypatch.setattr(schema, "version", stale_first_read)
    with ConversationStore.open(path) as store:
        assert store.load(chat.id).title == "first"
        assert real_version(store._conn) == VERSION
