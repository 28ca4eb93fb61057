"""F1: every key the app understands, read from :mod:`app.chat.keys`."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from app.chat.keys import APP_KEYS, LINK_KEYS, TEXT_KEYS
from app.chat.legend import legend_content


def help_content(with_link: bool) -> Content:
    rows = [(key.label, key.description) for key in APP_KEYS]
    if with_link:
        rows += [(key.label, key.description) for key in LINK_KEYS]
    rows += list(TEXT_KEYS)
    width = max(len(label) for label, _ in rows) + 2
    parts: list[tuple[str, str] | str | Content] = [("Keys\n\n", "bold")]
    for label, description in rows:
        parts += [(label.ljust(width), "bold $text-accent"), description + "\n"]
    parts += [("\nColours of the answer\n", "bold"), legend_content(False), ("\n\nEsc or F1 closes this.", "dim")]
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "close", "Close")]

    def __init__(self, with_link: bool) -> None:
        super().__init__()
        self.with_link = with_link

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(help_content(self.with_link))

    def action_close(self) -> None:
        self.dismiss(None)
