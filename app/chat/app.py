"""The Textual app: it only wires the engine, the store and the settings to the chat screen.

    exit_code = run_app(engine, store, settings, link_control, settings_path, problems)

The engine is opened here, on the app's loop, and closed when the app ends (quit, Ctrl+C, or a
crash of the UI); what is written of an answer is saved first. Problems found while reading the
configuration are shown as notifications at start: the app always starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from textual.app import App, SystemCommand
from textual.screen import Screen

from app.chat.chat_screen import ChatScreen, SettingsChanged
from app.chat.failure import describe
from app.chat.keys import APP_KEYS, LINK_KEYS
from app.chat.settings_screen import from_next_start
from app.chat.transcript import Transcript
from app.demo import LinkControl
from app.engine.chat import ChatEngine
from app.settings import Settings, save_settings
from app.store import ConversationStore
from drafts.errors import ConfigError

GC_THRESHOLDS = (50_000, 20, 100)  # Python's are (700, 10, 10): rendering allocates fast, collect less often
CLOSE_TIMEOUT_S = 5.0  # an engine that does not close in this time is left to the process exit


class MoaChatApp(App[int]):
    CSS_PATH = "chat.tcss"
    TITLE = "moa-chat"

    def __init__(
        self,
        engine: ChatEngine,
        store: ConversationStore,
        settings: Settings,
        link_control: LinkControl | None = None,
        settings_path: Path | None = None,
        problems: Iterable[str] = (),
    ) -> None:
        super().__init__()
        self.engine = engine
        self.store = store
        self.settings = settings
        self.link_control = link_control
        self.settings_path = settings_path
        self.problems = list(problems)
        self.engine_opened = asyncio.Event()  # set once open() returned or failed: answers wait for it
        self.chat = ChatScreen(engine, store, settings, link_control)

    def on_mount(self) -> None:
        # torch, transformers and the models make a heap of millions of objects: a full collection
        # of it takes a second and freezes the UI mid-answer. Objects alive now live as long as the
        # app, so they leave the collector's view (collections then cost what the app allocates).
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        self.apply_theme(self.settings.theme)
        self.push_screen(self.chat)
        self.engine.subscribe(self.chat.notice)
        self.run_worker(self._open_engine(), group="engine", exit_on_error=False)
        for problem in self.problems:
            self.notify(problem, title="Configuration problem", severity="warning", timeout=20, markup=False)

    async def _open_engine(self) -> None:
        try:
            await self.engine.open()
        except Exception as exc:  # a UI boundary: the engine's failure is a state of the app
            failure = describe(exc)
            self.notify(failure.message, title=failure.title, severity="error", timeout=30, markup=False)
        finally:
            self.engine_opened.set()
            # llama.cpp points the process's stdout/stderr at /dev/null while it loads the offline
            # model, and Textual writes the screen to stderr: what it painted meanwhile (the first
            # screen) was lost. Paint all of it again.
            self.screen.refresh(repaint=True, layout=True)

    def apply_theme(self, theme: str) -> None:
        if theme in self.available_themes:
            self.theme = theme
        else:
            self.notify(f"theme = {theme!r} is not a theme here; using {self.theme}", severity="warning", markup=False)

    def on_settings_changed(self, message: SettingsChanged) -> None:
        later = from_next_start(self.settings, message.settings)
        self.settings = message.settings
        self.apply_theme(message.settings.theme)
        try:
            path = save_settings(message.settings, self.settings_path)
        except (ConfigError, OSError) as exc:
            failure = describe(exc)
            self.notify(failure.message, title="Settings not saved", severity="error", timeout=15, markup=False)
            return
        note = f"; {' and '.join(later)} from the next start" if later else ""
        self.notify(f"saved to {path}{note}", title="Settings", markup=False)

    async def action_quit(self) -> None:
        self.chat.save_interrupted()
        self.exit(0)

    async def on_unmount(self) -> None:
        self.chat.save_interrupted()
        with contextlib.suppress(Exception):  # quitting: a failing close must not turn into a traceback
            await asyncio.wait_for(self.engine.close(), CLOSE_TIMEOUT_S)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        keys = APP_KEYS + (LINK_KEYS if self.link_control is not None else ())
        for key in keys:
            if key.action != "quit":
                yield SystemCommand(key.description.capitalize(), f"key {key.label}", self._chat_action(key.action))
        for title, call in (
            ("Rename this chat", self.chat.rename_chat),
            ("Delete this chat", self.chat.delete_chat),
            ("Export this chat as Markdown", lambda: self.chat.export_chat("markdown")),
            ("Export this chat as JSON", lambda: self.chat.export_chat("json")),
            ("Copy the last answer", self._copy_last_answer),
        ):
            yield SystemCommand(title, "", call)

    def _chat_action(self, action: str) -> Callable[[], Awaitable[None]]:
        return lambda: self.chat.run_action(action)

    def _copy_last_answer(self) -> None:
        view = self.chat.query_one(Transcript).target_reply()
        if view is not None:
            self.copy_to_clipboard(view.reply.text)
            self.notify("copied the answer")


def run_app(
    engine: ChatEngine,
    store: ConversationStore,
    settings: Settings,
    link_control: LinkControl | None,
    settings_path: Path | None,
    problems: list[str],
) -> int:
    """Run the chat until the user quits; the exit code."""
    app = MoaChatApp(engine, store, settings, link_control, settings_path, problems)
    result = app.run()
    return result if isinstance(result, int) else (app.return_code or 0)
