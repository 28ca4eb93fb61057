"""The demo's network control: one button per link preset; F5..F10 press them from anywhere."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Static

PRESET_KEYS = ("f5", "f6", "f7", "f8", "f9", "f10")  # in the order of LinkControl.presets


class NetworkBar(Horizontal):
    """A row of preset buttons; the current one is highlighted. Posts :class:`PresetChosen`."""

    @dataclass
    class PresetChosen(Message):
        name: str

    def __init__(self, presets: tuple[str, ...], current: str, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.presets = presets
        self.current = current

    def compose(self) -> ComposeResult:
        yield Static("link:", classes="network-label")
        for name, key in zip(self.presets, PRESET_KEYS, strict=False):
            yield Button(f"{name} {key.upper()}", id=f"preset-{name}", classes="preset", compact=True)

    def on_mount(self) -> None:
        self.show_current(self.current)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id and event.button.id.startswith("preset-"):
            self.post_message(self.PresetChosen(event.button.id.removeprefix("preset-")))

    def show_current(self, name: str) -> None:
        self.current = name
        for button in self.query(Button):
            button.variant = "primary" if button.id == f"preset-{name}" else "default"
