"""One answer being written: the engine's stream read into a buffer, folded in by the UI's flush.

The stream is read by a worker on the app's loop and only *appended* here; the app folds the
buffer into the reply, the status and the store on its own timer (:data:`FLUSH_HZ`), so the
transcript is redrawn 20 times a second however fast tokens come, and keystrokes are never
queued behind per-token redraws. The answer is saved to the store about once a second
(:data:`SAVE_EVERY_S`), so a crash or ``kill -9`` loses at most the last second.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.chat.reply import Reply
from app.engine.chat import ChatEngine, Message
from app.engine.events import EngineEvent, Finished, StatsUpdated
from drafts.decoding.config import DecodeConfig

FLUSH_HZ = 20  # tui.md: 20-30 Hz; every flush that grows a reply costs a layout pass
SAVE_EVERY_S = 1.0


@dataclass
class Answer:
    """See the module docstring. ``run`` never raises: an error ends it with ``error`` set."""

    message_id: int  # the assistant message in the store, updated as it streams
    prompt: str  # what the user typed for it (given back to the input if the answer fails early)
    reply: Reply = field(default_factory=Reply)
    pending: list[EngineEvent] = field(default_factory=list)
    finished: Finished | None = None
    latest: StatsUpdated | None = None
    error: BaseException | None = None
    done: bool = False
    saved_at: float = field(default_factory=time.monotonic)
    stopping: bool = False

    async def run(self, engine: ChatEngine, messages: Sequence[Message], decode: DecodeConfig) -> None:
        try:
            async for event in engine.stream(messages, decode):
                self.pending.append(event)
        except Exception as exc:  # a UI boundary: every failure becomes a message in the app
            self.error = exc
        finally:
            self.done = True

    def take(self) -> list[EngineEvent]:
        """The events that arrived since the last call, in order."""
        events, self.pending = self.pending, []
        for event in events:
            if isinstance(event, Finished):
                self.finished = event
            elif isinstance(event, StatsUpdated):
                self.latest = event
        return events

    def save_due(self) -> bool:
        return time.monotonic() - self.saved_at >= SAVE_EVERY_S

    def mark_saved(self) -> None:
        self.saved_at = time.monotonic()

    def stats_record(self) -> dict[str, Any] | None:
        """What the store keeps about a finished answer (its stats, tau, why it stopped)."""
        if self.finished is None:
            return None
        record = dataclasses.asdict(self.finished.stats)
        record["tokens_per_s"] = self.finished.stats.tokens_per_s
        record["stop"] = self.finished.stop.value if self.finished.stop is not None else "offline"
        if self.latest is not None:
            record["tau"] = self.latest.tau
            record["acceptance_rate"] = self.latest.acceptance_rate
        return record


def header_for(stats: dict[str, Any] | None, complete: bool) -> str:
    """The line above a finished reply: its size, tau and speed; or that it was cut off."""
    if stats is None:
        return "cut off (incomplete)" if not complete else ""
    parts = [f"{stats.get('new_tokens', 0)} tokens"]
    if stats.get("tau") is not None:
        parts.append(f"τ {stats['tau']:.2f}")
    parts.append(f"{stats.get('tokens_per_s', 0.0):.1f} tok/s")
    if stats.get("unverified"):
        parts.append(f"{stats['unverified']} unverified")
    stop = stats.get("stop")
    if stop in ("cancelled", "offline", "max_tokens"):
        parts.append({"cancelled": "stopped", "offline": "ended offline", "max_tokens": "length limit"}[stop])
    return " · ".join(parts)
