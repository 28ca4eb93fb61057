"""ConversationStore: the chats on disk, one SQLite file in WAL mode.

    store = ConversationStore.open()                 # the platformdirs data dir, or MOA_CHAT_DATA
    chat = store.create(system="Be brief.")
    store.add_message(chat.id, "user", "Hello")
    answer = store.add_message(chat.id, "assistant", "", complete=False)
    store.update_message(answer.id, text, runs, complete=False)   # ~1 Hz while it streams
    store.update_message(answer.id, text, runs, complete=True, stats={...})

Each write is one committed transaction. WAL with ``synchronous=NORMAL`` makes a commit survive
a crash or ``kill -9`` of the app (only a power cut can lose the last commits), and lets a reader
(a second window, a test) read while the app writes. One connection, guarded by a lock, serves
every thread of the app.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from enum import Enum
from pathlib import Path
from typing import Any

from app.store import export
from app.store.errors import StoreError, explain
from app.store.records import ConversationRecord, ConversationSummary, StoredMessage
from app.store.schema import NewerSchemaError, migrate, transaction
from drafts.locations import chat_data_dir

FILE_NAME = "conversations.sqlite3"
DEFAULT_TITLE = "New chat"
TITLE_CHARS = 60  # a title taken from the first message is cut here
BUSY_TIMEOUT_S = 5.0  # another process writing (a second app window) is waited for this long

ProvenanceIn = Sequence[tuple[str, "str | Enum"]]


def default_path() -> Path:
    """The store's file: ``conversations.sqlite3`` in the chat's data dir (``MOA_CHAT_DATA`` overrides)."""
    return chat_data_dir() / FILE_NAME


class UnknownConversationError(StoreError):
    """No conversation (or message) with that id: deleted meanwhile, or never made."""


class ConversationStore:
    """See the module docstring. Build it with :meth:`open`; every method may raise :class:`StoreError`."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.path = path
        self._conn = conn
        self._lock = threading.RLock()

    @classmethod
    def open(cls, path: Path | None = None) -> ConversationStore:
        """Open (creating and migrating as needed) the store at ``path`` (default: :func:`default_path`)."""
        path = Path(path) if path is not None else default_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
        except (sqlite3.Error, OSError) as exc:
            raise explain(exc, path, "open the file") from exc
        try:
            _configure(conn)
            migrate(conn)
        except NewerSchemaError as exc:
            conn.close()
            raise StoreError(
                f"the conversation store {path} was written by a newer moa-chat ({exc}); "
                "upgrade moa-chat, or set MOA_CHAT_DATA to another directory",
                path,
            ) from exc
        except sqlite3.Error as exc:
            conn.close()
            raise explain(exc, path, "prepare the file") from exc
        return cls(conn, path)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ConversationStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- conversations ---------------------------------------------------------------------------
    def create(self, title: str = DEFAULT_TITLE, system: str = "") -> ConversationRecord:
        now = time.time()
        with self._writing("create a conversation") as conn:
            cursor = conn.execute(
                "INSERT INTO conversations (title, system, created, updated) VALUES (?, ?, ?, ?)",
                (title, system, now, now),
            )
        assert cursor.lastrowid is not None
        return ConversationRecord(cursor.lastrowid, title, system, now, now, [])

    def list(self, search: str = "") -> builtins.list[ConversationSummary]:
        """Every conversation, the most recently changed first; ``search`` keeps those whose title or
        any message contains it (case-insensitive for ASCII letters)."""
        query = (
            "SELECT c.id, c.title, c.updated, (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) "
            "FROM conversations c"
        )
        params: tuple[Any, ...] = ()
        if search:
            query += (
                " WHERE instr(lower(c.title), lower(?)) > 0 OR EXISTS (SELECT 1 FROM messages m "
                "WHERE m.conversation_id = c.id AND instr(lower(m.content), lower(?)) > 0)"
            )
            params = (search, search)
        rows = self._read("list the conversations", query + " ORDER BY c.updated DESC, c.id DESC", params)
        return [ConversationSummary(*row) for row in rows]

    def load(self, conversation_id: int) -> ConversationRecord:
        """The conversation with its messages, in order."""
        rows = self._read(
            "load the conversation",
            "SELECT id, title, system, created, updated FROM conversations WHERE id = ?",
            (conversation_id,),
        )
        if not rows:
            raise UnknownConversationError(f"there is no conversation {conversation_id} in {self.path}", self.path)
        messages = self._read(
            "load the messages",
            "SELECT id, conversation_id, role, content, provenance, complete, stats, created "
            "FROM messages WHERE conversation_id = ? ORDER BY id",
            (conversation_id,),
        )
        ident, title, system, created, updated = rows[0]
        return ConversationRecord(ident, title, system, created, updated, [_message(row) for row in messages])

    def rename(self, conversation_id: int, title: str) -> None:
        with self._writing("rename the conversation") as conn:
            cursor = conn.execute(
                "UPDATE conversations SET title = ?, updated = ? WHERE id = ?", (title, time.time(), conversation_id)
            )
        self._check_found(cursor, "conversation", conversation_id)

    def delete(self, conversation_id: int) -> None:
        """Delete the conversation and its messages (deleting one that is gone already is fine)."""
        with self._writing("delete the conversation") as conn:
            conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))

    # -- messages --------------------------------------------------------------------------------
    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        provenance: ProvenanceIn = (),
        complete: bool = True,
        stats: dict[str, Any] | None = None,
    ) -> StoredMessage:
        """Append a message. A conversation still called "New chat" takes its first user message's
        first line as its title."""
        now = time.time()
        runs = _runs(provenance)
        with self._writing("save the message") as conn:
            found = conn.execute("SELECT title FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if found is None:
                raise UnknownConversationError(f"there is no conversation {conversation_id} in {self.path}", self.path)
            cursor = conn.execute(
                "INSERT INTO messages (conversation_id, role, content, provenance, complete, stats, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, role, content, json.dumps(runs), int(complete), _json_or_null(stats), now),
            )
            title = found[0]
            if title == DEFAULT_TITLE and role == "user" and content.strip():
                title = _title_from(content)
            conn.execute("UPDATE conversations SET title = ?, updated = ? WHERE id = ?", (title, now, conversation_id))
        assert cursor.lastrowid is not None
        return StoredMessage(cursor.lastrowid, conversation_id, role, content, runs, complete, stats, now)

    def update_message(
        self,
        message_id: int,
        content: str,
        provenance: ProvenanceIn = (),
        complete: bool = True,
        stats: dict[str, Any] | None = None,
    ) -> None:
        """Replace a message's text, provenance, completeness and stats (one transaction: call it ~1 Hz
        while an answer streams, and once when it finishes)."""
        now = time.time()
        with self._writing("save the message") as conn:
            cursor = conn.execute(
                "UPDATE messages SET content = ?, provenance = ?, complete = ?, stats = ? WHERE id = ?",
                (content, json.dumps(_runs(provenance)), int(complete), _json_or_null(stats), message_id),
            )
            conn.execute(
                "UPDATE conversations SET updated = ? WHERE id = (SELECT conversation_id FROM messages WHERE id = ?)",
                (now, message_id),
            )
        self._check_found(cursor, "message", message_id)

    def truncate_after(self, conversation_id: int, message_id: int) -> int:
        """Delete the conversation's messages after ``message_id`` (to edit or regenerate); how many went."""
        with self._writing("shorten the conversation") as conn:
            cursor = conn.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND id > ?", (conversation_id, message_id)
            )
            conn.execute("UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), conversation_id))
        return cursor.rowcount

    # -- export ----------------------------------------------------------------------------------
    def export_markdown(self, conversation_id: int) -> str:
        return export.to_markdown(self.load(conversation_id))

    def export_json(self, conversation_id: int) -> dict[str, Any]:
        return export.to_json(self.load(conversation_id))

    # -- plumbing --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _writing(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction under the lock; SQLite and OS errors become StoreErrors."""
        with self._lock:
            try:
                with transaction(self._conn) as conn:
                    yield conn
            except (sqlite3.Error, OSError) as exc:
                raise explain(exc, self.path, doing) from exc

    def _read(self, doing: str, query: str, params: tuple[Any, ...]) -> builtins.list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(query, params).fetchall()
            except (sqlite3.Error, OSError) as exc:
                raise explain(exc, self.path, doing) from exc

    def _check_found(self, cursor: sqlite3.Cursor, what: str, ident: int) -> None:
        if cursor.rowcount == 0:
            raise UnknownConversationError(f"there is no {what} {ident} in {self.path}", self.path)


def _configure(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # with WAL: durable across app crashes, fast commits
    conn.execute("PRAGMA foreign_keys = ON")  # deleting a conversation deletes its messages


def _runs(provenance: ProvenanceIn) -> builtins.list[tuple[str, str]]:
    """(text, source) runs with sources as plain strings (a TokenSource's value, or "repaired")."""
    return [(text, source.value if isinstance(source, Enum) else str(source)) for text, source in provenance]


def _json_or_null(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value)


def _message(row: tuple[Any, ...]) -> StoredMessage:
    ident, conversation_id, role, content, provenance, complete, stats, created = row
    runs = [(text, source) for text, source in json.loads(provenance)]
    return StoredMessage(
        ident, conversation_id, role, content, runs, bool(complete), json.loads(stats) if stats else None, created
    )


def _title_from(content: str) -> str:
    line = content.strip().splitlines()[0].strip()
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"
