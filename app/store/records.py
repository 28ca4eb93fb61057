"""What the store hands out: frozen values, never live rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A message's text as runs of one provenance each: (text, source), where source is a
# drafts.decoding.events.TokenSource value ("accepted", "target", "offline") or
# "repaired" (a span the verifier replaced after an offline spell). "".join(texts) == content.
Provenance = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class StoredMessage:
    id: int
    conversation_id: int
    role: str  # "user", "assistant" or "system"
    content: str
    provenance: list[tuple[str, str]] = field(default_factory=list)  # (text, source) runs; empty for typed text
    complete: bool = True  # False while (or if) the answer was cut off mid-stream
    stats: dict[str, Any] | None = None  # the generation's figures (tau, tokens/s, ...), when finished
    created: float = 0.0  # Unix time


@dataclass(frozen=True)
class ConversationSummary:
    """One line of the sidebar."""

    id: int
    title: str
    updated: float  # Unix time of the last change (messages included)
    messages: int


@dataclass(frozen=True)
class ConversationRecord:
    id: int
    title: str
    system: str  # the system prompt this conversation was started with
    created: float
    updated: float
    messages: list[StoredMessage] = field(default_factory=list)
