"""The open conversation: its stored messages, what the engine is sent, and the store calls behind them.

Every method may raise :class:`~app.store.errors.StoreError`; the screen turns it into a message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from app.engine.chat import Message
from app.store import ConversationStore
from app.store.records import StoredMessage


@dataclass
class Conversation:
    """See the module docstring. ``id`` is None until the first message creates it in the store."""

    store: ConversationStore
    id: int | None = None
    system: str = ""
    messages: list[StoredMessage] = field(default_factory=list)

    @classmethod
    def latest(cls, store: ConversationStore, system: str) -> Conversation:
        """The most recently changed conversation (how the app reopens after a restart), else a new one."""
        summaries = store.list()
        if not summaries:
            return cls(store, None, system)
        return cls.load(store, summaries[0].id)

    @classmethod
    def load(cls, store: ConversationStore, conversation_id: int) -> Conversation:
        record = store.load(conversation_id)
        return cls(store, record.id, record.system, list(record.messages))

    def turns(self) -> list[Message]:
        """What the engine is sent: the system prompt, then every non-empty message."""
        turns = [Message("system", self.system)] if self.system else []
        return turns + [Message(m.role, m.content) for m in self.messages if m.role != "system" and m.content]

    def add(self, role: str, content: str, complete: bool = True) -> StoredMessage:
        if self.id is None:
            self.id = self.store.create(system=self.system).id
        message = self.store.add_message(self.id, role, content, complete=complete)
        self.messages.append(message)
        return message

    def cut_from(self, index: int) -> int:
        """Delete the messages from ``index`` on (in the store too); how many went."""
        if self.id is None or index >= len(self.messages):
            return 0
        before = self.messages[index - 1].id if index > 0 else 0
        self.store.truncate_after(self.id, before)
        gone = len(self.messages) - index
        del self.messages[index:]
        return gone

    def last_index(self, role: str) -> int | None:
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].role == role:
                return index
        return None

    def replace(self, message: StoredMessage) -> None:
        """Keep the in-memory copy of a message the store just updated."""
        for index, each in enumerate(self.messages):
            if each.id == message.id:
                self.messages[index] = message


def export_to(store: ConversationStore, conversation_id: int, kind: str, directory: Path) -> Path:
    """Write the conversation as Markdown (``kind`` "markdown") or JSON into ``directory``; the file."""
    title = store.load(conversation_id).title
    slug = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:40] or "chat"
    if kind == "markdown":
        path, text = directory / f"moa-chat-{conversation_id}-{slug}.md", store.export_markdown(conversation_id)
    else:
        path = directory / f"moa-chat-{conversation_id}-{slug}.json"
        text = json.dumps(store.export_json(conversation_id), indent=2, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return path
