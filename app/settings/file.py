"""The settings file: TOML in the platformdirs config dir (``MOA_CHAT_CONFIG`` or ``--config F`` overrides).

Reading never stops the app: a file that does not parse, an unknown key or a bad value each give
one message (naming the file, the key, the value and what is allowed) and the default is used.
Writing keeps the user's comments and keys order (tomlkit) and is atomic: a temporary file in the
same directory, flushed to disk, then renamed over the old one, so a crash leaves either file whole.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import tomlkit

from app.settings.options import BY_NAME, OPTIONS
from app.settings.settings import Settings
from drafts.errors import ConfigError
from drafts.locations import config_file

HEADER = "moa-chat settings. Every key is also a flag: max_tokens = 512 is --max-tokens 512."


class SettingsWriteError(ConfigError):
    """The settings file cannot be written (read-only directory, full disk)."""


def load_settings(path: Path | None = None) -> tuple[Settings, list[str]]:
    """The settings in ``path`` (default: :func:`drafts.locations.config_file`), and one message per
    problem found; a missing file is the defaults, with no message."""
    path = path if path is not None else config_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings(), []
    except (OSError, UnicodeDecodeError) as exc:
        return Settings(), [f"cannot read the settings file {path}: {exc}; using the defaults"]
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return Settings(), [f"the settings file {path} is not valid TOML ({exc}); using the defaults"]
    return _settings_from(table, path)


def _settings_from(table: dict[str, Any], path: Path) -> tuple[Settings, list[str]]:
    values: dict[str, Any] = {}
    messages: list[str] = []
    for key, value in table.items():
        option = BY_NAME.get(key)
        if option is None:
            messages.append(f"{path}: unknown key {key!r} ignored; the keys are {', '.join(BY_NAME)}")
            continue
        try:
            values[key] = option.coerce(value)
        except ConfigError as exc:
            messages.append(f"{path}: {exc}; using the default {option.default!r}")
    if "server" in values and "mode" not in table:  # as --server does: a verifier URL means remote mode
        values["mode"] = "remote"
    return Settings(**values), messages


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    """Write ``settings`` to ``path`` (default: :func:`drafts.locations.config_file`) atomically; the path."""
    path = path if path is not None else config_file()
    document = _existing_document(path)
    for option in OPTIONS:
        value = getattr(settings, option.name)
        if option.name in document:
            document[option.name] = value
        else:
            document.add(tomlkit.comment(option.help))
            document.add(option.name, value)
    try:
        _write_atomically(path, tomlkit.dumps(document))
    except OSError as exc:
        raise SettingsWriteError(
            f"cannot save the settings to {path}: {exc}; make {path.parent} writable and free some space, "
            "or pass --config F (or set MOA_CHAT_CONFIG) to keep them elsewhere"
        ) from exc
    return path


def _existing_document(path: Path) -> tomlkit.TOMLDocument:
    """The file as it is (comments included), or a new document when it is missing or unreadable."""
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.ParseError):
        document = tomlkit.document()
        document.add(tomlkit.comment(HEADER))
        document.add(tomlkit.nl())
        return document


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
