"""The app driven by Pilot against a scripted engine (real events, real SQLite in a temporary directory)."""

from __future__ import annotations

from pathlib import Path

from textual.color import Color
from textual.widgets import Checkbox

from app.chat.prompt import PromptInput
from app.chat.reply import ACCEPTED, OFFLINE, REPAIRED, TARGET
from app.chat.sidebar import ChatList
from app.chat.status_bar import StatusBar
from app.engine.errors import VerifierRefusedError, VerifierUnavailableError
from app.settings import load_settings
from app.store import ConversationStore
from drafts.errors import ErrorCode
from tests.app.chat.pilot import SIZE, answering, make_app, notifications, replies, run, send, until
from tests.app.chat.screen_text import screen_text
from tests.app.chat.scripted_engine import ScriptedEngine


def colour_of(app, variable: str) -> Color:  # type: ignore[no-untyped-def]
    return Color.parse(app.get_css_variables()[variable])


def segment_styles(app, needle: str):  # type: ignore[no-untyped-def]
    return [
        segment.style
        for strip in app.screen._compositor.render_strips()
        for segment in strip
        if needle in segment.text and segment.style is not None
    ]


def test_a_sent_message_streams_in_with_each_tokens_provenance_style(tmp_path: Path) -> None:
    engine = ScriptedEngine(answer="alpha beta gamma delta epsilon zeta eta theta iota kappa", gamma=3, hold_after=8)

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            await until(pilot, lambda: len(replies(app)) == 1 and len(replies(app)[0].reply.texts) == 8)
            await until(pilot, lambda: bool(segment_styles(app, "delta")))
            reply = replies(app)[0].reply
            assert reply.labels[:4] == [ACCEPTED, ACCEPTED, ACCEPTED, TARGET]
            accepted = segment_styles(app, "alpha")
            target = segment_styles(app, "delta")
            assert accepted and accepted[0].color is not None
            assert accepted[0].color.triplet == colour_of(app, "text-success").rich_color.triplet
            assert target and target[0].color.triplet == colour_of(app, "text-primary").rich_color.triplet
            assert "accepted draft" in screen_text(app)  # the legend
            assert "writing" in screen_text(app)
            engine.release()
            await until(pilot, lambda: not answering(app))

    run(scenario())


def test_offline_before_sending_shows_the_badge_offline_tokens_then_the_repair(tmp_path: Path) -> None:
    engine = ScriptedEngine(answer=" ".join(f"w{i}" for i in range(12)), hold_after=6)

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f10")  # the demo's link: offline
            await until(pilot, lambda: "OFFLINE" in screen_text(app))
            await send(pilot, "hi")
            await until(pilot, lambda: len(replies(app)) == 1 and len(replies(app)[0].reply.texts) == 6)
            await pilot.pause(0.1)
            assert set(replies(app)[0].reply.labels) == {OFFLINE}
            await until(pilot, lambda: bool(segment_styles(app, "w2")))
            offline = segment_styles(app, "w2")
            assert offline and offline[0].italic and offline[0].underline, screen_text(app)
            await pilot.press("f5")  # back to lan: the offline span is repaired
            await until(pilot, lambda: "● online" in screen_text(app))
            engine.release()
            await until(pilot, lambda: not answering(app))
            await pilot.press("f4")  # the provenance view of the finished answer
            await until(pilot, lambda: bool(segment_styles(app, "w1")))
            assert REPAIRED in replies(app)[0].reply.labels and OFFLINE not in replies(app)[0].reply.labels
            repaired = segment_styles(app, "w1")
            assert repaired and repaired[0].bgcolor is not None
            stored = app.store.load(app.chat.conversation.id).messages[-1]  # type: ignore[arg-type]
            assert any(label == REPAIRED for _, label in stored.provenance) and stored.complete

    run(scenario())


def test_offline_during_an_answer_turns_the_rest_offline_until_the_link_returns(tmp_path: Path) -> None:
    engine = ScriptedEngine(answer=" ".join(f"w{i}" for i in range(16)), hold_after=4)

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hi")
            await until(pilot, lambda: len(replies(app)) == 1 and len(replies(app)[0].reply.texts) == 4)
            await pilot.press("f10")
            await until(pilot, lambda: "OFFLINE" in screen_text(app))
            engine.hold_after = 10
            engine.release()
            await until(pilot, lambda: len(replies(app)[0].reply.texts) >= 10)
            assert replies(app)[0].reply.labels[4:10] == [OFFLINE] * 6
            await pilot.press("f8")  # 4g: online again
            engine.release()
            await until(pilot, lambda: not answering(app))
            labels = replies(app)[0].reply.labels
            assert OFFLINE not in labels and REPAIRED in labels and labels[0] == ACCEPTED

    run(scenario())


def test_esc_stops_the_answer_and_keeps_what_was_written(tmp_path: Path) -> None:
    engine = ScriptedEngine(answer=" ".join(f"w{i}" for i in range(40)), hold_after=5)

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hi")
            await until(pilot, lambda: len(replies(app)) == 1 and len(replies(app)[0].reply.texts) == 5)
            await pilot.press("escape")
            await until(pilot, lambda: not answering(app))
            assert "stopped" in screen_text(app)
            stored = app.store.load(app.chat.conversation.id).messages[-1]  # type: ignore[arg-type]
            assert stored.content == "w0 w1 w2 w3 w4" and stored.stats and stored.stats["stop"] == "cancelled"

    run(scenario())


def test_the_conversation_is_there_again_after_a_restart(tmp_path: Path) -> None:
    async def first() -> None:
        app = make_app(tmp_path, ScriptedEngine(answer="remembered answer"))
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "remember me")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app))
            await pilot.press("ctrl+q")

    async def second() -> None:
        app = make_app(tmp_path, ScriptedEngine())
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.2)
            text = screen_text(app)
            assert "remember me" in text and "remembered answer" in text
            assert replies(app)[0].reply.text == "remembered answer"

    run(first())
    run(second())


def test_a_bad_config_value_is_shown_and_the_app_still_starts(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("temperature = 'hot'\nmax_tokens = 64\n")
    settings, problems = load_settings(config)
    assert settings.max_tokens == 64 and problems

    async def scenario() -> None:
        app = make_app(tmp_path, ScriptedEngine(answer="fine"), settings=settings, problems=problems)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: "temperature" in screen_text(app))
            assert any("temperature = 'hot' is not allowed" in n for n in notifications(app))
            await send(pilot, "still works")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app))
            assert replies(app)[0].reply.text == "fine"

    run(scenario())


def test_no_verifier_is_a_message_and_the_typed_text_comes_back(tmp_path: Path) -> None:
    failure = VerifierUnavailableError("no verifier answered at ws://127.0.0.1:9 within 10 s; start moa-server")
    engine = ScriptedEngine(fail_stream=failure)

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "my long question")
            await until(pilot, lambda: not answering(app) and bool(notifications(app)))
            assert any(n.startswith("No verifier") and "start moa-server" in n for n in notifications(app))
            assert app.chat.query_one(PromptInput).text == "my long question"
            assert replies(app) == []
            assert app.store.list() == [] or app.store.load(app.store.list()[0].id).messages == []

    run(scenario())


def test_a_refused_token_and_a_target_mismatch_are_named(tmp_path: Path) -> None:
    for code, title in ((ErrorCode.UNAUTHORIZED, "refused the token"), (ErrorCode.TARGET_MISMATCH, "another target")):
        engine = ScriptedEngine(fail_stream=VerifierRefusedError(code, "pass the right --token-file"))

        home = tmp_path / code.value

        async def scenario(engine: ScriptedEngine = engine, title: str = title, home: Path = home) -> None:
            app = make_app(home, engine)
            async with app.run_test(size=SIZE) as pilot:
                await send(pilot, "question")
                await until(pilot, lambda: not answering(app) and bool(notifications(app)))
                assert any(title in n for n in notifications(app))
                assert app.chat.query_one(PromptInput).text == "question"

        home.mkdir()
        run(scenario())


def test_a_full_disk_is_a_message_and_the_typed_text_comes_back(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(tmp_path, ScriptedEngine())
        async with app.run_test(size=SIZE) as pilot:
            pages = app.store._conn.execute("PRAGMA page_count").fetchone()[0]
            app.store._conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "database or disk is full"
            await send(pilot, "x" * 20000)
            await until(pilot, lambda: bool(notifications(app)))
            assert any("Cannot save" in n and "free some disk space" in n for n in notifications(app))
            assert app.chat.query_one(PromptInput).text == "x" * 20000
            assert not answering(app)

    run(scenario())


def test_regenerate_and_edit_send_the_truncated_conversation(tmp_path: Path) -> None:
    engine = ScriptedEngine(answer="an answer")

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "first")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app))
            await pilot.press("ctrl+r")
            await until(pilot, lambda: len(engine.calls) == 2 and not answering(app))
            assert engine.calls[1] == engine.calls[0]
            assert len(replies(app)) == 1
            conversation = app.store.load(app.chat.conversation.id)  # type: ignore[arg-type]
            assert [m.role for m in conversation.messages] == ["user", "assistant"]
            await pilot.press("ctrl+l")
            await pilot.pause(0.1)
            assert app.chat.query_one(PromptInput).text == "first"
            assert app.store.load(conversation.id).messages == []
            await pilot.press("end", "!", "enter")
            await until(pilot, lambda: len(engine.calls) == 3 and not answering(app))
            assert engine.calls[2][-1].content == "first!"

    run(scenario())


def test_the_settings_screen_names_a_bad_value_and_saves_a_good_one(tmp_path: Path) -> None:
    engine = ScriptedEngine(answer="ok")

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f2")
            await pilot.pause(0.1)
            field = app.screen.query_one("#field-temperature")
            field.value = "9"  # type: ignore[attr-defined]
            await pilot.press("ctrl+s")
            await pilot.pause(0.1)
            assert "temperature = 9.0 is not allowed" in screen_text(app)
            field.value = "0.5"  # type: ignore[attr-defined]
            await pilot.press("ctrl+s")
            await until(pilot, lambda: (tmp_path / "settings.toml").exists())
            assert "temperature = 0.5" in (tmp_path / "settings.toml").read_text()
            await send(pilot, "go")
            await until(pilot, lambda: len(engine.decodes) == 1 and not answering(app))
            assert engine.decodes[0].sampling.temperature == 0.5

    run(scenario())


def test_the_settings_screen_toggles_stream_and_the_status_bar_says_when_it_streams(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(tmp_path, ScriptedEngine(answer="ok", speculative_stream=True))
        async with app.run_test(size=SIZE) as pilot:
            assert "demo stream" in str(app.chat.query_one(StatusBar).render())
            await pilot.press("f2")
            await pilot.pause(0.1)
            switch = app.screen.query_one("#field-stream", Checkbox)
            switch.scroll_visible(animate=False)
            await pilot.pause(0.1)
            assert switch.value is False and "speculative streaming" in screen_text(app)
            switch.value = True
            await pilot.press("ctrl+s")
            await until(pilot, lambda: (tmp_path / "settings.toml").exists())
            assert "stream = true" in (tmp_path / "settings.toml").read_text()
            assert app.settings.stream is True
            assert any("stream from the next start" in note for note in notifications(app))

    run(scenario())


def test_chats_can_be_started_found_renamed_and_deleted(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(tmp_path, ScriptedEngine(answer="ok"))
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "about apples")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app))
            await pilot.press("ctrl+n")
            await send(pilot, "about pears")
            await until(pilot, lambda: len(app.store.list()) == 2 and not answering(app))
            app.chat.search = "apple"
            app.chat.refresh_sidebar()
            await pilot.pause(0.1)
            titles = [str(option.prompt) for option in app.chat.query_one(ChatList).options]
            assert len(titles) == 1 and "about apples" in titles[0]
            app.chat.rename_chat()
            await pilot.pause(0.1)
            app.screen.query_one("#ask-input").value = "Pears, renamed"  # type: ignore[attr-defined]
            await pilot.press("enter")
            await until(pilot, lambda: any(s.title == "Pears, renamed" for s in app.store.list()))
            app.chat.delete_chat()
            await pilot.pause(0.1)
            await pilot.press("y")
            await until(pilot, lambda: len(app.store.list()) == 1)
            assert app.store.list()[0].title == "about apples"

    run(scenario())


def test_export_writes_markdown_and_json_files(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)

    async def scenario() -> None:
        app = make_app(tmp_path, ScriptedEngine(answer="exported answer"))
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "export me")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app))
            app.chat.export_chat("markdown")
            app.chat.export_chat("json")
            await pilot.pause(0.1)

    run(scenario())
    assert "exported answer" in next(tmp_path.glob("moa-chat-*.md")).read_text()
    assert "exported answer" in next(tmp_path.glob("moa-chat-*.json")).read_text()


def test_rejected_drafts_toggle_inline_struck_out(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(tmp_path, ScriptedEngine(answer="one two three four five six"))
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "go")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app))
            await pilot.press("f4", "f3")
            await until(pilot, lambda: bool(segment_styles(app, "refused")))
            assert any(style.strike for style in segment_styles(app, "refused"))
            await pilot.press("f3")
            await pilot.pause(0.1)
            assert not segment_styles(app, "refused")

    run(scenario())


def test_the_status_bar_shows_the_link_and_the_answers_figures(tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(tmp_path, ScriptedEngine(answer="a b c d e f g h i j k l", fixed_speed=42.0))
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "go")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app))
            await pilot.pause(0.1)
            status = str(app.chat.query_one(StatusBar).render())
            for expected in ("demo", "● online 12 ms", "[lan]", "τ 4.00", "acc 75%", "42.0 tok/s", "rt/100", "B/tok"):
                assert expected in status, expected
            await pilot.press("ctrl+t")
            await pilot.pause(0.1)
            assert "acceptance by depth" in screen_text(app)

    run(scenario())


def test_history_is_saved_while_the_answer_streams(tmp_path: Path) -> None:
    engine = ScriptedEngine(answer=" ".join(f"w{i}" for i in range(30)), hold_after=6)

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hi")
            await until(pilot, lambda: len(replies(app)) == 1 and len(replies(app)[0].reply.texts) == 6)
            reader = ConversationStore.open(tmp_path / "conversations.sqlite3")  # a second connection, as after a crash
            await until(pilot, lambda: reader.load(reader.list()[0].id).messages[-1].content != "", timeout_s=3)
            saved = reader.load(reader.list()[0].id).messages[-1]
            assert saved.content == "w0 w1 w2 w3 w4 w5" and not saved.complete
            engine.release()
            await until(pilot, lambda: not answering(app))

    run(scenario())
