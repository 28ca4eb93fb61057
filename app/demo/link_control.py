"""LinkControl: what the UI (and ``--link-after``) switch the demo's link with."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from drafts.errors import ConfigError
from drafts.net.link import PRESETS, LinkProfile, preset
from drafts.net.shaper_thread import ShaperThread


class LinkControl:
    """The demo's link shaper, by preset name: ``lan``, ``wifi``, ``5g``, ``4g``, ``3g``, ``offline``.

    ``set_preset`` takes effect at once (``offline`` resets the open connection) and blocks only
    while the shaper's own loop carries it out (milliseconds), so the UI may call it directly.
    Listeners get the new preset's name on the caller's thread.
    """

    presets: tuple[str, ...] = tuple(PRESETS)

    def __init__(self, shaper: ShaperThread) -> None:
        self._shaper = shaper
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str], None]] = []

    @property
    def preset(self) -> str:
        return self._shaper.profile.name

    @property
    def profile(self) -> LinkProfile:
        return self._shaper.profile

    def set_preset(self, name: str) -> None:
        """Switch to the preset ``name``; an unknown name raises a ConfigError listing the choices."""
        profile = preset(name)
        with self._lock:
            self._shaper.set_profile(profile)
        for listener in list(self._listeners):
            listener(profile.name)

    def subscribe(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)

    def describe(self) -> str:
        """``4g (60 ms RTT, ±10 ms uniform jitter, 10 Mbit/s)``."""
        return self._shaper.profile.describe()


@dataclass(frozen=True)
class LinkAfter:
    """``--link-after N:PRESET``: switch the demo's link to ``preset`` once ``tokens`` are shown."""

    tokens: int
    preset: str

    @classmethod
    def parse(cls, text: str) -> LinkAfter:
        count, sep, name = text.partition(":")
        if not sep or not count.strip().isdigit():
            raise ConfigError(f"--link-after takes N:PRESET, e.g. 20:lan; got {text!r}")
        return cls(int(count), preset(name).name)
