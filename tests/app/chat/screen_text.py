"""The app's screen as plain text (for assertions, and to read what a test saw)."""

from __future__ import annotations

from textual.app import App


def screen_text(app: App[object]) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip).rstrip() for strip in strips)


def styles_of(app: App[object], needle: str) -> list[str]:
    """The styles of every segment on screen whose text contains ``needle``."""
    found = []
    for strip in app.screen._compositor.render_strips():
        for segment in strip:
            if needle in segment.text and segment.style is not None:
                found.append(str(segment.style))
    return found
