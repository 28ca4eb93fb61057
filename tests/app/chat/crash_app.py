"""The app, headless, answering one message slowly: for the ``kill -9`` test.

    python -m tests.app.chat.crash_app DIR     # the store lives in DIR; the answer takes ~20 s

DIR/received holds how many tokens the app has received so far (rewritten at each one): the
test's witness of what the user had seen when the app was killed, however loaded the machine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app.chat import MoaChatApp
from app.engine.events import EngineEvent, TokenGenerated
from app.settings import Settings
from app.store import ConversationStore
from tests.app.chat.scripted_engine import ScriptedEngine

WORDS = 400
RATE = 20  # tokens/s


def main(argv: list[str]) -> int:
    home = Path(argv[0])
    engine = ScriptedEngine(answer=" ".join(f"w{i}" for i in range(WORDS)), tokens_per_s=RATE)
    store = ConversationStore.open(home / "conversations.sqlite3")
    app = MoaChatApp(engine, store, Settings(), None, home / "settings.toml", [])
    witness = home / "received"
    draft = home / "received.part"

    def count(event: EngineEvent) -> None:
        if isinstance(event, TokenGenerated):  # atomic: a SIGKILL mid-write must not leave it empty
            draft.write_text(str(event.position + 1))
            os.replace(draft, witness)

    engine.subscribe(count)
    app.call_later(lambda: app.chat.send("crash me"))
    app.run(headless=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
