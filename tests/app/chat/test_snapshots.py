"""Snapshots of the transcript's provenance styles and of the status bar (Textual is pinned exactly:
snapshots change between releases). Update with ``pytest tests/app/chat/test_snapshots.py --snapshot-update``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from app.chat.transcript import Transcript
from tests.app.chat.pilot import answering, make_app, replies, send, until
from tests.app.chat.scripted_engine import ScriptedEngine

ANSWER = (
    "Accepted draft tokens are green, the target's own are blue; "
    "offline ones wait for the verifier to repair them."
)


def test_transcript_styles_and_status_bar(tmp_path: Path, snap_compare: Any) -> None:
    engine = ScriptedEngine(answer=ANSWER, fixed_speed=42.0, hold_after=5)

    async def play(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await pilot.press("ctrl+b")  # no sidebar: its dates change from run to run
        await send(pilot, "Show me every style")
        await until(pilot, lambda: len(replies(app)) == 1 and len(replies(app)[0].reply.texts) == 5)  # type: ignore[arg-type]
        await pilot.press("f10")
        engine.hold_after = 12
        engine.release()
        await until(pilot, lambda: len(replies(app)[0].reply.texts) == 12)  # type: ignore[arg-type]
        await pilot.press("f5")
        engine.release()
        await until(pilot, lambda: not answering(app))  # type: ignore[arg-type]
        await pilot.press("f4", "f3")  # the provenance view, rejected drafts shown
        app.screen.query_one(Transcript).scroll_end(animate=False)
        app.set_focus(None)  # no blinking cursor in the picture
        await pilot.pause(0.2)

    assert snap_compare(make_app(tmp_path, engine), terminal_size=(110, 24), run_before=play)
