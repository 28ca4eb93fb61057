"""From settings to a running engine: the demo's verifier first (when the mode needs it), then the engine.

    with launch(settings, on_progress=print) as launched:
        launched.engine, launched.info      # the ChatEngine and how the status bar names it
        launched.demo, launched.link        # the demo (verifier + shaper) and its LinkControl, or None

The demo is needed by ``demo`` mode and by ``api`` mode without ``--server``. Its verifier is
spawned before this process even imports torch, and loads in its own process while this one
loads the draft, so the slow parts overlap. A GGUF target is converted once per machine, into
the cache (the first start: both processes may convert it; the first to finish is used).
Leaving the ``with`` (normally, by Ctrl+C or an error) stops the demo; so does the exit of this
process (:mod:`app.demo.tether`). This module imports no torch: the engine's modules load lazily.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from app.demo import Demo, DemoOptions, LinkControl
from app.settings import Settings
from app.settings.draft import resolve_draft

if TYPE_CHECKING:
    from app.engine.chat import ChatEngine, EngineInfo
    from app.engine.factory import Progress

FIRST_START = "first start: converting the target model for this machine, once (about a minute)"


def needs_demo(settings: Settings) -> bool:
    return settings.mode == "demo" or (settings.mode == "api" and not settings.server)


@dataclass
class Launched:
    engine: ChatEngine
    info: EngineInfo
    demo: Demo | None

    @property
    def link(self) -> LinkControl | None:
        return self.demo.link if self.demo is not None else None

    def close(self) -> None:
        if self.demo is not None:
            self.demo.stop()

    def __enter__(self) -> Launched:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def launch(settings: Settings, on_progress: Progress | None = None) -> Launched:
    """Start what ``settings`` ask for; see the module docstring."""
    progress = on_progress or (lambda message: None)
    if settings.mode == "api":
        settings = settings.replace(draft="none")
    draft = resolve_draft(settings.draft, settings.target)  # a bad --draft fails before anything starts
    demo = None
    if needs_demo(settings):
        demo = Demo.launch(DemoOptions(settings.target, settings.device, draft.server_half, settings.link), progress)
    try:
        from app.engine.factory import build_engine  # torch and transformers: seconds
        from drafts.target.loading import ensure_converted

        ensure_converted(settings.target, lambda: progress(FIRST_START))
        engine, info = build_engine(settings, progress, verifier_url=demo.url if demo is not None else None)
        if demo is not None:
            demo.wait_ready()
    except BaseException:
        if demo is not None:
            demo.stop()
        raise
    return Launched(engine, info, demo)
