from __future__ import annotations

from app.chat.reply import ACCEPTED, OFFLINE, REJECTED, REPAIRED, TARGET, Reply
from app.chat.reply_view import split_blocks
from app.engine.events import DraftRejected, Repaired, StatsUpdated, TokenGenerated
from drafts.decoding.events import TokenSource


def token(position: int, text: str, source: TokenSource) -> TokenGenerated:
    return TokenGenerated(position, position, source, text, 0)


def test_tokens_are_runs_of_one_provenance_each() -> None:
    reply = Reply()
    for position, (text, source) in enumerate(
        [("Hel", TokenSource.DRAFT_ACCEPTED), ("lo", TokenSource.DRAFT_ACCEPTED), (" there", TokenSource.TARGET)]
    ):
        assert reply.apply(token(position, text, source))
    assert reply.runs() == [("Hello", ACCEPTED), (" there", TARGET)]
    assert reply.text == "Hello there"


def test_a_repair_replaces_the_offline_span_and_marks_it_repaired() -> None:
    reply = Reply()
    reply.apply(token(0, "A", TokenSource.DRAFT_ACCEPTED))
    for position, text in enumerate([" b", " c", " d"], start=1):
        reply.apply(token(position, text, TokenSource.OFFLINE))
    assert reply.runs() == [("A", ACCEPTED), (" b c d", OFFLINE)]
    sources = (TokenSource.DRAFT_ACCEPTED, TokenSource.TARGET)
    reply.apply(Repaired(1, 4, (1, 9), sources, kept=1, texts=(" b", " X"), char_start=1, char_end=7))
    assert reply.runs() == [("A", ACCEPTED), (" b X", REPAIRED)]
    assert reply.repairs == 1
    reply.apply(token(3, "!", TokenSource.TARGET))
    assert reply.text == "A b X!"


def test_rejected_drafts_show_only_on_demand_and_never_reach_the_store() -> None:
    reply = Reply()
    reply.apply(token(0, "Hi", TokenSource.DRAFT_ACCEPTED))
    reply.apply(DraftRejected(1, (5, 6)))
    reply.apply(token(1, " you", TokenSource.TARGET))
    assert reply.runs() == [("Hi", ACCEPTED), (" you", TARGET)]
    shown = reply.runs(show_rejected=True)
    assert shown[1][1] == REJECTED and shown[2] == (" you", TARGET)
    assert reply.provenance() == reply.runs()


def test_a_stored_reply_shows_as_it_streamed() -> None:
    runs = [("Hello", ACCEPTED), (" world", REPAIRED)]
    assert Reply.from_runs(runs, "Hello world").runs() == runs
    assert Reply.from_runs([], "plain").runs() == [("plain", TARGET)]


def test_events_that_are_not_text_change_nothing() -> None:
    stats = StatsUpdated(1.0, 0.5, (), None, 1.0, 1, 1.0, 1.0, 1.0, 1.0, 1.0, 1, 0)
    assert not Reply().apply(stats)


def test_blocks_cut_at_blank_lines_keep_each_runs_style() -> None:
    runs = [("one\n\ntw", ACCEPTED), ("o", TARGET), ("\n\nthree", OFFLINE)]
    assert split_blocks(runs) == [(("one", ACCEPTED),), (("tw", ACCEPTED), ("o", TARGET)), (("three", OFFLINE),)]
