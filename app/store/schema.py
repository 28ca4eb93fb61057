"""The store's schema and its migrations, versioned with ``PRAGMA user_version``.

Version N of the schema is what ``MIGRATIONS[:N]`` builds. Opening a store runs the migrations
it has not run yet, each in one transaction with its version bump, so a store is always at a
version this code knows. A store written by a newer moa-chat (a higher version) is refused
rather than guessed at.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

V1 = """
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    system TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    provenance TEXT NOT NULL DEFAULT '[]',  -- JSON [[text, source], ...]
    complete INTEGER NOT NULL DEFAULT 1,
    stats TEXT,                             -- JSON object, or NULL
    created REAL NOT NULL
);
CREATE INDEX messages_by_conversation ON messages(conversation_id, id);
CREATE INDEX conversations_by_update ON conversations(updated DESC);
"""

MIGRATIONS: tuple[str, ...] = (V1,)
VERSION = len(MIGRATIONS)


class NewerSchemaError(Exception):
    """The file was written by a newer moa-chat."""


def version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to :data:`VERSION`; return the version found before."""
    found = version(conn)
    if found > VERSION:
        raise NewerSchemaError(f"schema version {found}, this moa-chat knows up to {VERSION}")
    for number in range(found, VERSION):
        with transaction(conn):  # the migration and its version bump land together
            if version(conn) != number:
                continue  # another process (a second moa-chat) ran this step between our read and our lock
            for statement in _statements(MIGRATIONS[number]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number + 1}")
    return found


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on an autocommit connection: committed on exit, rolled back on error."""
    conn.execute("BEGIN IMMEDIATE")  # take the write lock now, not at the first write
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # a failed COMMIT (disk full) may have rolled back already
            conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """The statements of a migration script (executescript would commit mid-transaction)."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
