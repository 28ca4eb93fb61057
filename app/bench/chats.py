"""Multi-turn benchmark chats: the user messages of each conversation, in order.

    load_chats("sharegpt-heldout", limit=5, turns=3)   # conversations with at least 3 user turns
    load_chats("chats.jsonl", limit=5, turns=2)

A chat is the system message (if the conversation starts with one) and its first ``turns`` user
messages; the assistant's turns are left out, because the benchmark plays the engine's own
answers in their place. Sources: the ShareGPT held-out split (``sharegpt-heldout``), or a JSONL
file whose rows hold ``{"turns": ["question", "follow-up", ...]}`` (MT-bench) or ShareGPT's
``{"conversations": [{"from": "human", "value": ...}, ...]}``. Conversations with fewer user
turns are skipped, so every turn's mean is over the same chats. Each message is cut to
``max_chars`` characters, so five turns of long ShareGPT messages stay within a small target's
context.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from drafts.data.conversations import Turn
from drafts.data.sharegpt import clean_turns, load_sharegpt
from drafts.errors import DatasetError

MAX_CHARS = 1_000  # per user message


@dataclass(frozen=True)
class BenchChat:
    id: str
    system: Turn | None
    users: tuple[Turn, ...]  # the user messages, in order


def load_chats(dataset: str, limit: int, turns: int, max_chars: int = MAX_CHARS) -> list[BenchChat]:
    """The first ``limit`` conversations of ``dataset`` with at least ``turns`` user messages."""
    if dataset == "sharegpt-heldout":
        rows = [(c.id, c.turns) for c in load_sharegpt("heldout")]
    else:
        rows = _jsonl(Path(dataset))
    chats = [chat for chat_id, t in rows if (chat := _chat(chat_id, t, turns, max_chars)) is not None]
    if not chats:
        raise DatasetError(
            f"{dataset} has no conversation with {turns} user turns; use sharegpt-heldout, a JSONL file "
            'of {"turns": [...]} rows, or fewer --turns'
        )
    return chats[:limit]


def _chat(chat_id: str, turns: tuple[Turn, ...], count: int, max_chars: int) -> BenchChat | None:
    users = tuple(Turn("user", t.content[:max_chars]) for t in turns if t.role == "user" and t.content.strip())
    if len(users) < count:
        return None
    system = turns[0] if turns and turns[0].role == "system" else None
    return BenchChat(chat_id, system, users[:count])


def _jsonl(path: Path) -> list[tuple[str, tuple[Turn, ...]]]:
    if not path.is_file():
        raise DatasetError(f"{path} is not a file; pass sharegpt-heldout or a JSONL file of chats")
    rows: list[tuple[str, tuple[Turn, ...]]] = []
    # split("\n"), not splitlines(): a JSON string may hold U+2028, which splitlines() splits on
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} line {number}: not valid JSON ({exc}); fix or delete the line") from exc
        chat_id = str(row.get("id", number)) if isinstance(row, dict) else str(number)
        if isinstance(row, dict) and isinstance(row.get("turns"), list):
            rows.append((chat_id, tuple(Turn("user", str(t)) for t in row["turns"])))
        elif isinstance(row, dict) and "conversations" in row:
            rows.append((chat_id, clean_turns(row["conversations"])))
    return rows
