"""Conversations on disk: SQLite in WAL mode under the platformdirs data dir (``MOA_CHAT_DATA`` overrides).

    records.py   ConversationRecord, ConversationSummary, StoredMessage (frozen values)
    schema.py    the schema, versioned with ``PRAGMA user_version``, and its migrations
    store.py     ConversationStore: create, list/search, load, rename, delete, messages
    export.py    a conversation as Markdown or as a JSON-ready dict
    errors.py    StoreError: a full disk or unwritable directory, with the path and the fix

A message being generated is saved as it streams (``update_message`` about once a second), each
call one committed transaction, so a crash or ``kill -9`` loses at most the last second.
"""

from app.store.errors import StoreError
from app.store.records import ConversationRecord, ConversationSummary, Provenance, StoredMessage
from app.store.store import ConversationStore, default_path

__all__ = [
    "ConversationRecord",
    "ConversationStore",
    "ConversationSummary",
    "Provenance",
    "StoreError",
    "StoredMessage",
    "default_path",
]
