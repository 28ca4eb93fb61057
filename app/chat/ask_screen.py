"""A small modal that asks for one line of text (a chat's new title); Esc cancels."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class AskScreen(ModalScreen[str | None]):
    """Dismissed with the text entered, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="ask", classes="dialog"):
            yield Static(self.question, markup=False)
            yield Input(self.value, id="ask-input")
            yield Static("Enter saves · Esc cancels", classes="dim")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
