"""The input box: Enter sends, Shift+Enter or Ctrl+J starts a new line, Up in an empty box edits the last message."""

from __future__ import annotations

from dataclasses import dataclass

from textual import events
from textual.message import Message
from textual.widgets import TextArea

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "alt+enter"})  # terminals deliver one of these for a new line


class PromptInput(TextArea):
    """A multi-line input that posts :class:`Submitted` on Enter (its text, then cleared)."""

    @dataclass
    class Submitted(Message):
        """The user sent ``text``."""

        text: str

    @dataclass
    class EditLastRequested(Message):
        """Up was pressed in an empty box: the user wants the last message back to edit it."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's keyword
        super().__init__(
            "",
            id=id,
            soft_wrap=True,
            compact=True,
            highlight_cursor_line=False,
            placeholder="Message  (Enter sends · Shift+Enter/Ctrl+J new line · F1 keys)",
        )

    async def _on_key(self, event: events.Key) -> None:
        """Runs before TextArea's handler; stopping the event keeps TextArea from inserting a newline."""
        if event.key == "enter":
            self._stop(event)
            self._submit()
        elif event.key in NEWLINE_KEYS:
            self._stop(event)
            self.insert("\n")
        elif event.key == "up" and not self.text:
            self._stop(event)
            self.post_message(self.EditLastRequested())
        # anything else: TextArea's own _on_key runs next (Textual dispatches along the MRO)

    def restore(self, text: str) -> None:
        """Put ``text`` back (a send that failed, or an edit), cursor at its end."""
        self.text = text
        self.move_cursor(self.document.end)
        self.focus()

    def _submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        self.clear()
        self.post_message(self.Submitted(text))

    @staticmethod
    def _stop(event: events.Key) -> None:
        event.stop()
        event.prevent_default()
