"""Helpers for the app's Pilot tests: build the app on a real SQLite store in a temporary directory."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from app.chat import MoaChatApp
from app.chat.chat_screen import ChatScreen
from app.chat.prompt import PromptInput
from app.chat.reply_view import ReplyView
from app.chat.transcript import Transcript
from app.settings import Settings
from app.store import ConversationStore
from tests.app.chat.scripted_engine import ScriptedEngine, ScriptedLink

SIZE = (120, 40)


def run(coro: Coroutine[Any, Any, Any], timeout_s: float = 60.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout_s))


def make_app(
    tmp_path: Path,
    engine: ScriptedEngine | Any,
    *,
    link: bool = True,
    settings: Settings | None = None,
    problems: list[str] | None = None,
) -> MoaChatApp:
    store = ConversationStore.open(tmp_path / "conversations.sqlite3")
    link_control = ScriptedLink(engine) if link and isinstance(engine, ScriptedEngine) else None
    app = MoaChatApp(
        engine, store, settings or Settings(), link_control, tmp_path / "settings.toml", problems or []  # type: ignore[arg-type]
    )
    return record_notifications(app)


def record_notifications(app: MoaChatApp) -> MoaChatApp:
    """Keep every notification in ``app.notified`` (toasts expire; a test may look later)."""
    notify = app.notify
    app.notified = []  # type: ignore[attr-defined]

    def recorded(message: str, *, title: str = "", **kwargs: Any) -> None:
        app.notified.append(f"{title}: {message}")  # type: ignore[attr-defined]
        notify(message, title=title, **kwargs)

    app.notify = recorded  # type: ignore[method-assign]
    return app


async def until(pilot: Pilot[Any], condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Let the app run until ``condition`` holds (an AssertionError after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)


async def send(pilot: Pilot[Any], text: str) -> None:
    prompt = pilot.app.screen.query_one(PromptInput)
    prompt.focus()
    prompt.insert(text)
    await pilot.press("enter")


def chat(app: MoaChatApp) -> ChatScreen:
    return app.chat


def replies(app: MoaChatApp) -> list[ReplyView]:
    return app.chat.query_one(Transcript).replies()


def answering(app: MoaChatApp) -> bool:
    return app.chat.answer is not None


def notifications(app: MoaChatApp) -> list[str]:
    return list(app.notified)  # type: ignore[attr-defined]
