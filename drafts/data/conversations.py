"""Chat conversations as domain values: what every dataset reader returns.

The readers (:mod:`drafts.data.sharegpt`, :mod:`drafts.data.prompts`) turn their wire formats
into these frozen values; nothing downstream sees a ShareGPT ``"from"``/``"value"`` pair.
"""

from __future__ import annotations

from dataclasses import dataclass

ROLES = frozenset({"system", "user", "assistant"})


@dataclass(frozen=True)
class Turn:
    """One message of a chat: who spoke (``system``, ``user`` or ``assistant``) and what."""

    role: str
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {sorted(ROLES)}, not {self.role!r}")


@dataclass(frozen=True)
class Conversation:
    """A chat with an id that stays stable across reads of the same source file."""

    id: str
    turns: tuple[Turn, ...]
