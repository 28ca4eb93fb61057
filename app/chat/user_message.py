"""One message the user sent, as the transcript shows it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static


class UserMessage(Vertical):
    """The user's text, verbatim (never parsed as markup)."""

    def __init__(self, text: str) -> None:
        super().__init__(classes="user")
        self.text = text

    def compose(self) -> ComposeResult:
        yield Static(Content.assemble(("you", "bold")), classes="user-header")
        yield Static(Content(self.text), classes="user-text")
