"""The transcript: rounds, offline tokens and repairs become events that fold into the output."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from app.engine.events import DraftRejected, EngineEvent, Finished, Repaired, Shown, TokenGenerated
from app.engine.sync import EngineThread
from app.engine.transcript import Scribe, Transcript
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopCondition, StopReason
from tests.app.engine.scenario import PROMPT, SERVER_RUNNER, client_draft, engine_config
from tests.app.engine.servers import ServerThread

ACCEPTED, TARGET, OFFLINE = TokenSource.DRAFT_ACCEPTED, TokenSource.TARGET, TokenSource.OFFLINE


def transcript(max_new: int = 20, stop_ids: frozenset[int] = frozenset()) -> tuple[Transcript, list[EngineEvent]]:
    events: list[EngineEvent] = []
    t = Transcript([1, 2, 3], StopCondition(max_new, stop_ids), lambda ids: "", events.append)
    return t, events


def shown(events: list[EngineEvent]) -> Shown:
    view = Shown()
    for event in events:
        view.apply(event)
    return view


def test_a_round_shows_accepted_tokens_then_the_rejected_ones_then_the_targets() -> None:
    t, events = transcript()

    t.confirm_round([10, 11], [12, 13], 14)

    assert events == [
        TokenGenerated(0, 10, ACCEPTED),
        TokenGenerated(1, 11, ACCEPTED),
        DraftRejected(2, (12, 13)),
        TokenGenerated(2, 14, TARGET),
    ]
    assert t.confirmed == [10, 11, 14] and t.root == 14 and t.history == [1, 2, 3, 10, 11]


def test_a_stop_token_ends_the_generation_and_is_not_shown() -> None:
    t, events = transcript(stop_ids=frozenset({11}))

    t.confirm_round([10, 11, 12], [], 13)

    assert t.stop is StopReason.EOS and t.confirmed == [10]


def test_offline_tokens_stop_at_the_limit_and_wait_for_repair() -> None:
    t, events = transcript(max_new=5)
    t.confirm_round([10], [], 11)

    t.add_offline([20, 21, 22, 23])

    assert t.offline == [20, 21, 22] and t.offline_complete and t.stop is None
    assert [e.source for e in events if isinstance(e, TokenGenerated)][-3:] == [OFFLINE] * 3


def test_a_repair_replaces_the_offline_span_from_the_first_rejection() -> None:
    t, events = transcript()
    t.confirm_round([], [], 10)
    t.add_offline([20, 21, 22, 23])

    t.repair(4, [20, 21, 30], [ACCEPTED, ACCEPTED, TARGET], kept=2)

    assert events[-1] == Repaired(1, 5, (20, 21, 30), (ACCEPTED, ACCEPTED, TARGET), 2, ("", "", ""), 0, 0)
    assert events[-1].replaced == 2
    view = shown(events)
    assert view.tokens == [10, 20, 21, 30] == t.confirmed and t.offline == []
    assert view.count(OFFLINE) == 0 and view.count(ACCEPTED) + view.count(TARGET) == 4
    assert (t.counts.offline, t.counts.kept) == (4, 2)


def test_a_repair_piece_that_matches_keeps_the_rest_offline() -> None:
    t, events = transcript()
    t.add_offline([20, 21, 22, 23])

    t.repair(2, [20, 21], [ACCEPTED, TARGET], kept=2)

    assert t.confirmed == [20, 21] and t.offline == [22, 23]
    assert shown(events).sources == [ACCEPTED, TARGET, OFFLINE, OFFLINE]


def letters(ids: Sequence[int]) -> str:
    return "".join(chr(ord("a") + i % 26) for i in ids)


def test_every_event_carries_its_tokens_text_and_where_it_starts() -> None:
    events: list[EngineEvent] = []
    t = Transcript([1, 2, 3], StopCondition(20), letters, events.append)
    t.confirm_round([0, 1], [], 2)  # "abc"
    t.add_offline([3, 4, 5])  # "def"

    t.repair(3, [3, 7], [ACCEPTED, TARGET], kept=1)  # "ef" becomes "h"

    tokens = [e for e in events if isinstance(e, TokenGenerated)]
    assert [(e.text, e.char_start) for e in tokens] == [("a", 0), ("b", 1), ("c", 2), ("d", 3), ("e", 4), ("f", 5)]
    repaired = events[-1]
    assert isinstance(repaired, Repaired)
    assert (repaired.texts, repaired.char_start, repaired.char_end) == (("d", "h"), 3, 6)
    assert shown(events).text == t.answer == "abcdh"


def test_a_stop_string_ends_the_output_with_the_token_that_completes_it() -> None:
    events: list[EngineEvent] = []
    t = Transcript([1], StopCondition(20, stop_strings=("cd",)), letters, events.append)

    t.confirm_round([0, 1, 2], [], 3)

    assert t.stop is StopReason.STOP_STRING and t.confirmed == [0, 1, 2, 3] and t.answer == "abcd"


def test_the_scribe_runs_the_verbs_on_its_thread_and_emits_their_events_on_the_loop_in_order() -> None:
    emitted: list[tuple[str, EngineEvent]] = []
    threads: list[str] = []

    def letters(ids: Sequence[int]) -> str:
        threads.append(threading.current_thread().name)
        return "".join(chr(ord("a") + i % 26) for i in ids)

    async def main() -> None:
        with ThreadPoolExecutor(1, thread_name_prefix="moa-text") as text:
            scribe = Scribe(text, lambda e: emitted.append((threading.current_thread().name, e)))
            t = Transcript([1], StopCondition(20), letters, scribe.buffer)
            await scribe.run(t.confirm_round, [4, 5], [], 6)
            scribe.post(t.confirm_round, [], [9], 7)  # not awaited: emitted once it ran
            scribe.post(t.confirm_round, [8], [], 9)
            await scribe.drain()

    asyncio.run(main())

    assert threads and all(name.startswith("moa-text") for name in threads)
    assert {name for name, _ in emitted} == {threading.current_thread().name}  # asyncio.run's loop: this thread
    events = [e for _, e in emitted]
    assert [e.token for e in events if isinstance(e, TokenGenerated)] == [4, 5, 6, 7, 8, 9]
    assert shown(events).text == "efghij" and [type(e) for e in events].count(DraftRejected) == 1


def test_a_generation_decodes_its_text_off_the_sockets_loop_and_the_events_spell_the_answer() -> None:
    threads: set[str] = set()
    draft = client_draft("eagle")

    def decode(ids: Sequence[int]) -> str:
        threads.add(threading.current_thread().name)
        return draft.decode(ids)

    with (
        ServerThread(SERVER_RUNNER) as server,
        EngineThread(engine_config(server.port), dataclasses.replace(draft, decode=decode)) as engine,
    ):
        events = list(engine.stream(PROMPT, DecodeConfig(max_new_tokens=16)))

    finished = events[-1]
    assert isinstance(finished, Finished) and len(finished.tokens) == 16
    assert threads and all(name.startswith("moa-text") for name in threads)  # never "moa-engine-loop"
    assert finished.text and shown(events).text == finished.text == draft.decode(list(finished.tokens))
