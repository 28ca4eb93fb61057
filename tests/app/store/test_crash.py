"""An answer saved as it streams survives a kill -9 of the app, losing at most the last update."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from app.store import ConversationStore
from drafts.locations import REPO_ROOT

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from app.store import ConversationStore

    store = ConversationStore.open(Path(sys.argv[1]))
    chat = store.create()
    store.add_message(chat.id, "user", "count for me")
    answer = store.add_message(chat.id, "assistant", "", complete=False)
    text = ""
    for n in range(100_000):
        text += f"{n} "
        store.update_message(answer.id, text, [(text, "accepted")], complete=False)
        print(n, flush=True)  # after the commit: n is on disk
        time.sleep(0.01)
    """
)


def test_a_kill_9_mid_answer_keeps_every_committed_update(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    last = -1
    try:
        while last < 30:
            line = child.stdout.readline()
            assert line, "the writer died before it was killed"
            last = int(line)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    assert child.returncode == -signal.SIGKILL

    with ConversationStore.open(path) as store:
        [summary] = store.list()
        answer = store.load(summary.id).messages[-1]
    numbers = [int(n) for n in answer.content.split()]
    assert numbers == list(range(len(numbers)))  # a whole update, never a torn one
    assert len(numbers) >= last + 1  # everything reported committed is there
    assert answer.complete is False
    assert answer.provenance == [(answer.content, "accepted")]
