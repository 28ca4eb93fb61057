"""The chats sidebar (Ctrl+B): search, open, new, rename, delete and export past conversations.

The sidebar knows no store: it shows the summaries it is given and posts what the user asked for.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, OptionList
from textual.widgets.option_list import Option

from app.store.records import ConversationSummary

ACTIONS = {"new": "new", "rename": "rename", "delete": "delete", "md": "export_markdown", "json": "export_json"}


def _when(updated: float) -> str:
    return time.strftime("%d %b %H:%M", time.localtime(updated))


def summary_content(summary: ConversationSummary, current: bool) -> Content:
    title = ("▶ " if current else "  ") + summary.title
    detail = f"\n  {_when(summary.updated)} · {summary.messages} msgs"
    return Content.assemble((title, "bold" if current else ""), (detail, "dim"))


class ChatList(OptionList):
    """The list itself, with keys for the chosen chat."""

    BINDINGS = [
        Binding("r", "ask('rename')", "Rename"),
        Binding("delete,d", "ask('delete')", "Delete"),
        Binding("m", "ask('export_markdown')", "Export Markdown"),
        Binding("j", "ask('export_json')", "Export JSON"),
    ]

    def action_ask(self, action: str) -> None:
        sidebar = next(a for a in self.ancestors if isinstance(a, Sidebar))
        sidebar.ask(action)


class Sidebar(Vertical):
    """See the module docstring."""

    @dataclass
    class ChatChosen(Message):
        conversation_id: int

    @dataclass
    class SearchChanged(Message):
        text: str

    @dataclass
    class ActionRequested(Message):
        """``action``: new, rename, delete, export_markdown or export_json; on ``conversation_id``."""

        action: str
        conversation_id: int | None

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's keyword
        super().__init__(id=id)
        self.current: int | None = None

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search chats (Ctrl+F)", id="chat-search", compact=True)
        yield ChatList(id="chat-list")
        with Horizontal(id="chat-actions"):
            for label in ACTIONS:
                button = Button(label, id=f"chat-{label}", compact=True)
                button.can_focus = False
                yield button

    def show(self, summaries: Sequence[ConversationSummary], current: int | None) -> None:
        self.current = current
        chat_list = self.query_one(ChatList)
        chat_list.set_options(Option(summary_content(s, s.id == current), id=str(s.id)) for s in summaries)
        ids = [s.id for s in summaries]
        if current in ids:
            chat_list.highlighted = ids.index(current)

    def chosen(self) -> int | None:
        """The highlighted chat, else the open one."""
        option = self.query_one(ChatList).highlighted_option
        return int(option.id) if option is not None and option.id else self.current

    def ask(self, action: str) -> None:
        self.post_message(self.ActionRequested(action, self.chosen()))

    def focus_search(self) -> None:
        self.query_one("#chat-search", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.SearchChanged(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(ChatList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.ChatChosen(int(event.option.id)))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        label = (event.button.id or "").removeprefix("chat-")
        if label in ACTIONS:
            self.ask(ACTIONS[label])
