"""Finished answers keep the model's line breaks (a poem stays in lines); code blocks are untouched."""

from __future__ import annotations

from pathlib import Path

from app.chat.markdown_parser import chat_markdown_parser
from tests.app.chat.pilot import SIZE, answering, make_app, replies, run, send, until
from tests.app.chat.screen_text import screen_text
from tests.app.chat.scripted_engine import ScriptedEngine

POEM = "Roses are red,\nviolets are blue.\n\n```\nx = 1\ny = 2\n```"


def test_a_newline_inside_a_paragraph_is_a_hard_break() -> None:
    inline = chat_markdown_parser().parse("Roses are red,\nviolets are blue.")[1]

    assert [child.type for child in inline.children or ()] == ["text", "hardbreak", "text"]


def test_a_code_block_keeps_its_text() -> None:
    fence = [token for token in chat_markdown_parser().parse(POEM) if token.type == "fence"]

    assert [token.content for token in fence] == ["x = 1\ny = 2\n"]


def test_a_finished_answer_shows_its_lines_as_lines(tmp_path: Path) -> None:
    engine = ScriptedEngine(answer=POEM)

    async def scenario() -> None:
        app = make_app(tmp_path, engine)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "a poem")
            await until(pilot, lambda: len(replies(app)) == 1 and not answering(app))
            await until(pilot, lambda: replies(app)[0].markdown)
            await pilot.pause()
            lines = [line.strip(" ▕█") for line in screen_text(app).splitlines()]
            assert "Roses are red," in lines and "violets are blue." in lines

    run(scenario())
