"""The offline spell's one rule of its own: an answer begun offline never ends before its first token."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from app.engine.spell import first_token_bans

STOPS = frozenset({2, 7})


def generation(output: list[int]) -> Any:
    """What first_token_bans reads of a Generation: the draft's stops and the transcript's output."""
    return SimpleNamespace(draft=SimpleNamespace(stop_ids=STOPS), transcript=SimpleNamespace(output=output))


def test_while_the_answer_is_empty_the_offline_writer_may_not_write_a_stop() -> None:
    assert first_token_bans(generation([])) == STOPS


def test_once_the_answer_has_a_token_a_stop_may_end_it() -> None:
    assert first_token_bans(generation([5])) == frozenset()
