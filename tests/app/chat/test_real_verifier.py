"""The app against a real verifier on loopback, through the real link shaper and LinkControl.

The verifier serves the engine tests' tiny target (with a chat template) on 127.0.0.1, so these
run in seconds; the engine is the real RemoteChatEngine with a random MoA draft.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.chat import MoaChatApp
from app.chat.reply import ACCEPTED, OFFLINE, REPAIRED, TARGET
from app.chat.status_bar import StatusBar
from app.demo import LinkControl
from app.settings import Settings
from app.store import ConversationStore
from drafts.net import ShaperThread, preset
from tests.app.chat.pilot import SIZE, answering, record_notifications, replies, run, send, until
from tests.app.engine.chat_scenario import SERVER, chat_engine
from tests.app.engine.servers import ServerThread


@pytest.fixture
def shaper() -> Iterator[ShaperThread]:
    with (
        ServerThread(SERVER, resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=preset("wifi")) as link,
    ):
        yield link


def make_app(tmp_path: Path, shaper: ShaperThread, max_tokens: int, **engine_options: object) -> MoaChatApp:
    engine = chat_engine(shaper.port, **engine_options)
    store = ConversationStore.open(tmp_path / "conversations.sqlite3")
    app = MoaChatApp(engine, store, Settings(max_tokens=max_tokens), LinkControl(shaper), tmp_path / "s.toml", [])
    return record_notifications(app)


def status(app: MoaChatApp) -> str:
    return str(app.chat.query_one(StatusBar).render())


def test_an_answer_from_the_verifier_streams_with_provenance(tmp_path: Path, shaper: ShaperThread) -> None:
    async def scenario() -> None:
        app = make_app(tmp_path, shaper, max_tokens=24)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "● online" in status(app), 20)
            await send(pilot, "abc")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app), 60)
            reply = replies(app)[0].reply
            assert len(reply.texts) == 24 and set(reply.labels) <= {ACCEPTED, TARGET} and TARGET in reply.labels
            stored = app.store.load(app.chat.conversation.id).messages[-1]  # type: ignore[arg-type]
            assert stored.complete and stored.content == reply.text and stored.stats["new_tokens"] == 24  # type: ignore[index]
            assert "τ" in status(app) and "tok/s" in status(app)

    run(scenario(), 120)


def test_offline_before_sending_writes_offline_then_repairs_when_the_link_returns(
    tmp_path: Path, shaper: ShaperThread
) -> None:
    async def scenario() -> None:
        app = make_app(tmp_path, shaper, max_tokens=24, offline_budget=5)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: "● online" in status(app), 20)
            await send(pilot, "abc")  # a first answer online (the engine starts offline only after a session)
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app), 60)
            await pilot.press("f10")  # offline: the shaper resets the connection
            await until(pilot, lambda: "OFFLINE" in status(app) or "reconnecting" in status(app), 20)
            await send(pilot, "def")
            await until(pilot, lambda: len(replies(app)) == 2 and replies(app)[1].reply.count(OFFLINE) == 5, 30)
            await pilot.press("f6")  # wifi: back
            await until(pilot, lambda: not answering(app), 60)
            reply = replies(app)[1].reply
            assert reply.count(OFFLINE) == 0 and reply.count(REPAIRED) >= 1 and len(reply.texts) >= 24
            await until(pilot, lambda: "● online" in status(app) or "degraded" in status(app), 20)

    run(scenario(), 150)


def test_esc_stops_an_answer_from_the_verifier(tmp_path: Path, shaper: ShaperThread) -> None:
    async def scenario() -> None:
        app = make_app(tmp_path, shaper, max_tokens=400)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f9")  # 3g: slow enough to stop mid-answer
            await until(pilot, lambda: "● online" in status(app) or "degraded" in status(app), 20)
            await send(pilot, "abc")
            await until(pilot, lambda: len(replies(app)) == 1 and len(replies(app)[0].reply.texts) >= 3, 60)
            await pilot.press("escape")
            await until(pilot, lambda: not answering(app), 20)
            stored = app.store.load(app.chat.conversation.id).messages[-1]  # type: ignore[arg-type]
            assert stored.stats is not None and stored.stats["stop"] == "cancelled"
            assert 3 <= stored.stats["new_tokens"] < 400

    run(scenario(), 150)
