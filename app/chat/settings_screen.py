"""F2: the chat's settings (system prompt, sampling, answer length, draft shape, offline budget, streaming, theme).

The fields and their help lines come from :mod:`app.settings.options`; a bad value is shown under
the form with what is allowed (the same message the TOML file would get), and nothing is saved.
Dismissed with the new :class:`Settings`, or None on Esc; the app saves and applies them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Select, Static, TextArea

from app.settings import BY_NAME, Settings
from drafts.errors import ConfigError

FIELDS = ("temperature", "top_p", "max_tokens", "chain", "tree", "offline_budget")
SWITCHES = ("stream",)  # the bool options: a checkbox each
NEXT_START = ("offline_budget", "stream")  # read when the engine is built: a change applies from the next start
NOTES = {"chain": " (ignored when a tree is set)"} | {name: " (applies from the next start)" for name in NEXT_START}


def from_next_start(old: Settings, new: Settings) -> list[str]:
    """The changed settings that the running engine does not see (they apply from the next start)."""
    return [name for name in NEXT_START if getattr(old, name) != getattr(new, name)]


def parse_field(name: str, text: str) -> Any:
    """The typed value of a field's text, or a ConfigError naming the key and what is allowed."""
    option = BY_NAME[name]
    if option.kind is str:
        return text.strip()
    try:
        return option.kind(text.strip())
    except ValueError:
        raise ConfigError(f"{name} = {text!r} is not allowed: {name} takes {option.allowed}") from None


class SettingsScreen(ModalScreen[Settings | None]):
    """See the module docstring."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "save", "Save", priority=True)]

    def __init__(self, settings: Settings, themes: Iterable[str]) -> None:
        super().__init__()
        self.settings = settings
        self.themes = sorted(set(themes) | {settings.theme})

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="settings", classes="dialog"):
            yield Static("Settings  (Ctrl+S saves · Esc cancels)", classes="dialog-title")
            yield Static("", id="settings-error", markup=False)
            yield Static(BY_NAME["system_prompt"].help, classes="field-help")
            yield TextArea(self.settings.system_prompt, id="field-system_prompt", compact=True)
            for name in FIELDS:
                yield Static(f"{name}: {BY_NAME[name].help}{NOTES.get(name, '')}", classes="field-help", markup=False)
                yield Input(str(getattr(self.settings, name)), id=f"field-{name}", compact=True)
            for name in SWITCHES:
                yield Static(f"{name}: {BY_NAME[name].help}{NOTES.get(name, '')}", classes="field-help", markup=False)
                yield Checkbox(name, getattr(self.settings, name), id=f"field-{name}", compact=True)
            yield Static("theme", classes="field-help")
            yield Select([(t, t) for t in self.themes], value=self.settings.theme, allow_blank=False, id="field-theme")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (Ctrl+S)", id="save", variant="primary")
                yield Button("Cancel (Esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()

    def action_save(self) -> None:
        try:
            settings = self.settings.replace(**self._values())
        except ConfigError as exc:
            error = self.query_one("#settings-error", Static)
            error.update(str(exc))
            error.scroll_visible()
            return
        self.dismiss(settings)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _values(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            name: parse_field(name, self.query_one(f"#field-{name}", Input).value) for name in FIELDS
        }
        values |= {name: self.query_one(f"#field-{name}", Checkbox).value for name in SWITCHES}
        values["system_prompt"] = self.query_one("#field-system_prompt", TextArea).text
        values["theme"] = str(self.query_one("#field-theme", Select).value)
        return values
