"""The store's branch of moa-chat's one exception tree (:mod:`drafts.errors`).

MoaError (drafts.errors)
└── StoreError     the conversation store cannot be opened, read or written
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from drafts.errors import MoaError


class StoreError(MoaError):
    """The conversation store cannot be opened, read or written; the message names the path and the fix."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def explain(exc: sqlite3.Error | OSError, path: Path, doing: str) -> StoreError:
    """A StoreError for ``exc`` raised while ``doing`` (e.g. "save the message") on the store at ``path``."""
    text = str(exc)
    lowered = text.lower()
    if "full" in lowered or getattr(exc, "errno", None) == 28:  # SQLITE_FULL / ENOSPC
        fix = f"free some disk space on the drive holding {path.parent}, or set MOA_CHAT_DATA to another drive"
    elif "readonly" in lowered or "read-only" in lowered or "permission" in lowered or "unable to open" in lowered:
        fix = f"make {path.parent} writable, or set MOA_CHAT_DATA to a writable directory"
    elif "malformed" in lowered or "not a database" in lowered:
        fix = f"the file is damaged: move {path} aside (the app then starts a new one), or set MOA_CHAT_DATA elsewhere"
    else:
        fix = f"check that {path} is a readable, writable SQLite file, or set MOA_CHAT_DATA to another directory"
    return StoreError(f"cannot {doing} in the conversation store {path}: {text}; {fix}", path)
