"""``kill -9`` of the app mid-answer loses at most the last second, and the app reopens the chat."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from app.store import ConversationStore
from tests.app.chat.crash_app import RATE
from tests.app.chat.pilot import SIZE, make_app, replies, run
from tests.app.chat.screen_text import screen_text
from tests.app.chat.scripted_engine import ScriptedEngine

REPO = Path(__file__).resolve().parents[3]


def saved_answer(store: ConversationStore) -> str:
    summaries = store.list()
    if not summaries:
        return ""
    messages = store.load(summaries[0].id).messages
    return messages[-1].content if messages and messages[-1].role == "assistant" else ""


def test_kill_9_mid_answer_keeps_the_answer_up_to_the_last_second(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    app = subprocess.Popen([sys.executable, "-m", "tests.app.chat.crash_app", str(tmp_path)], cwd=REPO, env=env)
    try:
        reader_deadline = time.monotonic() + 120
        while not (tmp_path / "conversations.sqlite3").exists() and time.monotonic() < reader_deadline:
            time.sleep(0.1)
        reader = ConversationStore.open(tmp_path / "conversations.sqlite3")
        while len(saved_answer(reader).split()) < 30:  # well into the answer
            assert time.monotonic() < reader_deadline and app.poll() is None, "the app did not start answering"
            time.sleep(0.1)
        time.sleep(1.5)
        os.kill(app.pid, signal.SIGKILL)
    finally:
        app.kill()
        app.wait()
    after = ConversationStore.open(tmp_path / "conversations.sqlite3")
    kept = after.load(after.list()[0].id).messages
    assert [m.role for m in kept] == ["user", "assistant"] and not kept[-1].complete
    words = kept[-1].content.split()
    assert words == [f"w{i}" for i in range(len(words))]
    received = int((tmp_path / "received").read_text())  # tokens the app had when it was killed
    assert len(words) >= received - 2 * RATE  # at most the last ~second (plus scheduling slack) lost

    async def reopen() -> None:
        app = make_app(tmp_path, ScriptedEngine())
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.3)
            assert replies(app)[0].reply.text == kept[-1].content
            assert "cut off (incomplete)" in screen_text(app) and "crash me" in screen_text(app)

    run(reopen())
