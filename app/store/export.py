"""A conversation as Markdown (to read or share) and as a JSON-ready dict (to keep or process)."""

from __future__ import annotations

import datetime
from typing import Any

from app.store.records import ConversationRecord, StoredMessage

ROLE_HEADINGS = {"user": "You", "assistant": "Assistant", "system": "System"}


def to_markdown(record: ConversationRecord) -> str:
    lines = [f"# {record.title}", "", f"_{_when(record.created)}_", ""]
    if record.system:
        lines += ["**System prompt:**", "", _quote(record.system), ""]
    for message in record.messages:
        lines += [f"## {ROLE_HEADINGS.get(message.role, message.role.title())}", "", message.content, ""]
        if not message.complete:
            lines += ["_(cut off before the end)_", ""]
    return "\n".join(lines).rstrip() + "\n"


def to_json(record: ConversationRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "title": record.title,
        "system": record.system,
        "created": record.created,
        "updated": record.updated,
        "messages": [_message_dict(message) for message in record.messages],
    }


def _message_dict(message: StoredMessage) -> dict[str, Any]:
    return {
        "id": message.id,
        "role": message.role,
        "content": message.content,
        "provenance": [{"text": text, "source": source} for text, source in message.provenance],
        "complete": message.complete,
        "stats": message.stats,
        "created": message.created,
    }


def _when(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())
