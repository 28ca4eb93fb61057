"""What a chat UI drives: one interface whatever runs the target (remote verifier, this device, API).

    engine = ...                      # RemoteChatEngine / LocalChatEngine / ApiChatEngine, via build_engine()
    engine.subscribe(on_event)        # LinkChanged (and other idle events) at any time, from open() on
    await engine.open()
    async for event in engine.stream(messages, DecodeConfig(max_new_tokens=256)):
        ...                           # TokenGenerated (with text), DraftRejected, Repaired, LinkChanged,
                                      # StatsUpdated, OfflineBudgetReached, ..., Finished (with text)
    await engine.cancel()             # from another task: the stream ends with Finished(stop=CANCELLED)
    await engine.close()              # cancels a running stream first

``messages`` is the whole conversation so far, ending with the user's message (or, to regenerate,
ending where the new answer goes). The engine renders it with the target's chat template (one
home: :mod:`drafts.target.chat`) and reuses what the verifier and the draft already hold: only
the tokens after the longest common prefix with the previous turn are sent. Editing an earlier
message simply passes the edited conversation: the engine rewinds to where it differs.

The UI never asks which kind of engine it has: ``describe()`` gives the words for its status bar.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.engine.events import EngineEvent
from drafts.data.conversations import Turn
from drafts.decoding.config import DecodeConfig

Message = Turn  # role ("system", "user" or "assistant") and content: one home, drafts.data.conversations


@dataclass(frozen=True)
class EngineInfo:
    """How the status bar names what runs."""

    mode: str  # "remote", "local", "api" or "demo"
    draft: str  # "moa", "eagle", "independent", a checkpoint's name, or "none"
    target: str  # the target's name
    device: str  # where the draft (and, locally, the target) runs: "cpu", "cuda", "mps"
    verifier: str  # the verifier's URL, or "this device"
    stream: bool = False  # speculative streaming (EngineConfig.stream): the verifier decodes, proposals ride along


class ChatEngine(Protocol):
    def describe(self) -> EngineInfo: ...

    def subscribe(self, callback: Callable[[EngineEvent], None]) -> None:
        """``callback`` gets every event, idle ones (LinkChanged) included, on the engine's loop."""
        ...

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    def stream(self, messages: Sequence[Message], decode: DecodeConfig) -> AsyncIterator[EngineEvent]:
        """The next assistant message after ``messages``: its events, ending with Finished."""
        ...

    async def cancel(self) -> None:
        """Stop the running generation (if any); its stream ends with Finished(stop=CANCELLED)."""
        ...
