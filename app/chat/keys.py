"""Every key of the app, in one table: the app's bindings and the help screen (F1) both read it.

Keys are ctrl, F-keys and plain keys only: Cmd/Alt combinations are unreliable in terminals.
F5..F10 switch the demo's link (in the order of ``LinkControl.presets``: lan, wifi, 5g, 4g, 3g,
offline); the app binds them with priority, so the input box's own F6/F7 never shadow them.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from app.chat.network_bar import PRESET_KEYS
from drafts.net.link import PRESETS


@dataclass(frozen=True)
class Key:
    keys: str  # Textual key names, comma-separated
    action: str  # the app's action
    description: str  # what the help screen and the footer say
    label: str  # how the help screen writes the key


APP_KEYS: tuple[Key, ...] = (
    Key("escape", "stop", "stop the answer being written", "Esc"),
    Key("ctrl+n", "new_chat", "new chat", "Ctrl+N"),
    Key("ctrl+r", "regenerate", "write the last answer again", "Ctrl+R"),
    Key("ctrl+l", "edit_last", "edit your last message (its answer is dropped)", "Ctrl+L"),
    Key("f1", "help", "this help", "F1"),
    Key("f2", "settings", "settings", "F2"),
    Key("f3", "toggle_rejected", "show/hide rejected draft tokens (struck out)", "F3"),
    Key("f4", "toggle_view", "switch the selected (else last) answer: Markdown / provenance", "F4"),
    Key("ctrl+b", "toggle_sidebar", "show/hide the chats sidebar", "Ctrl+B"),
    Key("ctrl+f", "search_chats", "search chats", "Ctrl+F"),
    Key("ctrl+t", "toggle_stats", "show/hide the stats panel (acceptance by depth, live plots)", "Ctrl+T"),
    Key("ctrl+o", "focus_input", "back to the input box", "Ctrl+O"),
    Key("ctrl+q", "quit", "quit", "Ctrl+Q"),
)
PRESET_NAMES = tuple(PRESETS)  # lan, wifi, 5g, 4g, 3g, offline
LINK_KEYS: tuple[Key, ...] = tuple(
    Key(key, f"link('{name}')", f"demo: switch the link to {name}", key.upper())
    for key, name in zip(PRESET_KEYS, PRESET_NAMES, strict=False)
)
TEXT_KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send the message"),
    ("Shift+Enter / Ctrl+J", "new line in the message"),
    ("Up (empty input)", "edit your last message"),
    ("Ctrl+P", "command palette (every command, searchable)"),
    ("mouse drag, Ctrl+C", "select text, copy it"),
    ("Tab / Shift+Tab", "move between input, transcript and sidebar"),
    ("sidebar: Enter r d m j", "open, rename, delete, export Markdown / JSON the highlighted chat"),
)


def bindings(with_link: bool) -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    keys = APP_KEYS + (LINK_KEYS if with_link else ())
    return [
        Binding(key.keys, key.action, key.description, show=False, priority=key.keys.startswith("f"))
        for key in keys
    ]
