"""One generation's output as the engine holds it: confirmed tokens, then unverified offline ones.

    prompt | confirmed (verified: accepted drafts and the target's own) | offline (unverified)

Every change to it goes through a verb here that emits the matching event
(:mod:`app.engine.events`) and applies the stop rules (:class:`~drafts.decoding.stopping.StopCondition`'s,
checked token by token): a round's tokens are confirmed, offline tokens appended, an offline span
repaired. The output's text is kept by an incremental :class:`~app.engine.text.Detokenizer`, so
each event carries its tokens' text and character offsets, and a stop string is found without
decoding the whole output again. The verifier holds every context token but the newest (the
*root*, the next chain's parent). A generation runs the verbs on a text thread of their own
(:class:`Scribe`), so that detokenizing never delays the socket's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass, field
from typing import Any

from app.engine.events import DraftRejected, EngineEvent, Repaired, TokenGenerated
from app.engine.text import Detokenizer, Piece
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopCondition, StopReason
from drafts.errors import ConfigError


@dataclass
class Counts:
    accepted: int = 0
    target: int = 0
    offline: int = 0  # generated offline in all
    kept: int = 0  # offline tokens the verifier confirmed
    resynced: int = 0  # offline tokens after a rejection, confirmed in re-sync rounds (app.engine.resync_round)
    verify_rounds: int = 0
    drafted: int = 0  # tokens in the chains sent for verification
    drafted_ahead: int = 0  # chains sent as drafted ahead, during the previous verification
    accepted_by_depth: list[int] = field(default_factory=list)  # verified chains whose depth-d token was accepted
    tried_by_depth: list[int] = field(default_factory=list)  # ... that reached depth d (the ones before accepted)

    def record_chain(self, proposed: int, accepted: int) -> None:
        """A verified chain: acceptance by depth counts a token as tried if every one before it was accepted."""
        tried = min(proposed, accepted + 1)
        while len(self.tried_by_depth) < tried:
            self.tried_by_depth.append(0)
            self.accepted_by_depth.append(0)
        for depth in range(tried):
            self.tried_by_depth[depth] += 1
            self.accepted_by_depth[depth] += depth < accepted


@dataclass
class Transcript:
    prompt: list[int]
    stop_condition: StopCondition
    decode: Callable[[Sequence[int]], str]
    emit: Callable[[EngineEvent], None]
    confirmed: list[int] = field(default_factory=list)
    offline: list[int] = field(default_factory=list)
    stop: StopReason | None = None  # the generation is over
    offline_complete: bool = False  # the offline tokens reached a stop: generate no more until verified
    counts: Counts = field(default_factory=Counts)
    started: float = field(default_factory=time.perf_counter)
    first_token_at: float | None = None
    last_token_at: float | None = None
    longest_pause_s: float = 0.0
    on_first_token: Callable[[], None] | None = None  # called once, as the first token is shown
    text: Detokenizer = field(init=False)

    def __post_init__(self) -> None:
        self.text = Detokenizer(self.decode, self.stop_condition.stop_strings)

    @classmethod
    def begin(
        cls,
        prompt: list[int],
        decode: DecodeConfig,
        stop_ids: frozenset[int],
        text: Callable[[Sequence[int]], str],
        emit: Callable[[EngineEvent], None],
    ) -> Transcript:
        """A generation's transcript: ``decode``'s stop rules, with the target's end-of-turn tokens."""
        if not prompt:
            raise ConfigError("the prompt is empty; give the model at least one token to continue")
        stop = StopCondition(decode.max_new_tokens, stop_ids, decode.stop_strings)
        return cls(list(prompt), stop, text, emit)

    @property
    def context(self) -> list[int]:
        """Prompt and confirmed output: what the verifier holds, plus the root."""
        return self.prompt + self.confirmed

    @property
    def root(self) -> int:
        return self.prompt[-1] if not self.confirmed else self.confirmed[-1]

    @property
    def history(self) -> list[int]:
        """What the verifier must hold: every context token but the root."""
        return self.context[:-1]

    @property
    def output(self) -> list[int]:
        return self.confirmed + self.offline

    @property
    def answer(self) -> str:
        """The output's text (confirmed and offline)."""
        return self.text.text

    # -- verbs -----------------------------------------------------------------------------------
    def confirm_round(self, accepted: list[int], rejected: list[int], next_token: int) -> None:
        """A verified chain: ``accepted`` drafts, then the target's ``next_token``; ``rejected`` struck out."""
        assert not self.offline, "repair the offline tokens before confirming new rounds"
        sources = [TokenSource.DRAFT_ACCEPTED] * len(accepted) + [TokenSource.TARGET]
        tokens, pieces = self._admit(accepted + [next_token])
        for token, piece, source in zip(tokens, pieces, sources, strict=False):
            if source is TokenSource.TARGET and rejected:
                self.emit(DraftRejected(len(self.confirmed), tuple(rejected)))
            self._shown()
            self.emit(TokenGenerated(len(self.confirmed), token, source, piece.text, piece.char_start))
            self.confirmed.append(token)
            self._count([source])

    def confirm_part(self, tokens: list[int], drafted: int) -> None:
        """A speculative stream's part (one server step): its first ``drafted`` tokens were drafted
        here and accepted, the rest are the target's own (:mod:`app.engine.stream_generation`)."""
        assert not self.offline, "repair the offline tokens before confirming new parts"
        sources = [TokenSource.DRAFT_ACCEPTED] * drafted + [TokenSource.TARGET] * (len(tokens) - drafted)
        kept, pieces = self._admit(tokens)
        for token, piece, source in zip(kept, pieces, sources, strict=False):
            self._shown()
            self.emit(TokenGenerated(len(self.confirmed), token, source, piece.text, piece.char_start))
            self.confirmed.append(token)
            self._count([source])

    def add_offline(self, tokens: list[int]) -> None:
        """Unverified tokens; the last ones are dropped if they reach a stop (then offline_complete)."""
        stop = self.stop
        tokens, pieces = self._admit(tokens)
        if self.stop is not None:
            self.stop, self.offline_complete = stop, True  # a stop offline ends nothing until verified
        for token, piece in zip(tokens, pieces, strict=True):
            self._shown()
            self.emit(TokenGenerated(len(self.output), token, TokenSource.OFFLINE, piece.text, piece.char_start))
            self.offline.append(token)
            self.counts.offline += 1

    def repair(self, replaced: int, tokens: list[int], sources: list[TokenSource], kept: int) -> None:
        """The first ``replaced`` offline tokens are verified and replaced by ``tokens`` (all confirmed)."""
        start, complete = len(self.confirmed), self.offline_complete
        char_start, char_end = self.text.char_of(start), self.text.char_of(start + replaced)
        text_end = len(self.text.text)
        rest = self.offline[replaced:]
        self.text.cut(start)
        tokens, pieces = self._admit(tokens)
        sources = sources[: len(tokens)]
        if self.stop is not None:
            replaced, rest, char_end = len(self.offline), [], text_end  # nothing after the stop stays
        kept = min(kept, len(tokens))
        self.offline = []
        self.confirmed += tokens
        self.counts.kept += kept
        self._count(sources)
        self._shown()
        texts = tuple(p.text for p in pieces)
        self.emit(Repaired(start, start + replaced, tuple(tokens), tuple(sources), kept, texts, char_start, char_end))
        self.offline_complete = False
        if rest:
            self._restore_offline(rest)
            self.offline_complete = self.offline_complete or complete

    # -- internals -------------------------------------------------------------------------------
    def _admit(self, tokens: list[int]) -> tuple[list[int], list[Piece]]:
        """Append ``tokens`` to the output's text, one at a time, up to a stop (which sets ``stop``).

        The order of ``StopCondition.check`` for tokens that come one at a time: a stop token ends
        the output before itself; a stop string ends it with the token completing it; the length
        limit with the token that reaches it.
        """
        rule, kept, pieces = self.stop_condition, [], []
        for token in tokens:
            if token in rule.stop_ids:
                self.stop = StopReason.EOS
                break
            pieces.append(self.text.append(token))
            kept.append(token)
            if self.text.stop_at is not None:
                self.stop = StopReason.STOP_STRING
                break
            if len(self.text.tokens) >= rule.max_new_tokens:
                self.stop = StopReason.MAX_TOKENS
                break
        return kept, pieces

    def _restore_offline(self, rest: list[int]) -> None:
        """The offline tokens after a repaired piece stay shown: their text is taken in again (no events)."""
        stop = self.stop
        tokens, _ = self._admit(rest)
        self.offline = tokens
        if self.stop is not None:
            self.stop, self.offline_complete = stop, True

    def _count(self, sources: list[TokenSource]) -> None:
        for source in sources:
            if source is TokenSource.TARGET:
                self.counts.target += 1
            else:
                self.counts.accepted += 1

    def _shown(self) -> None:
        now = time.perf_counter()
        if self.first_token_at is None:
            self.first_token_at = now
            if self.on_first_token is not None:
                self.on_first_token()
        elif self.last_token_at is not None:
            self.longest_pause_s = max(self.longest_pause_s, now - self.last_token_at)
        self.last_token_at = now


class Scribe:
    """Runs a transcript's verbs on the text thread and emits the events they made on the loop, in order.

    Detokenizing (~50 µs a token, plus the stop-string search) thus stays off the event loop that
    answers the keepalive's pings; the events are the ones the verbs make, unchanged. The
    transcript's ``emit`` is ``buffer``; a verb runs on the text thread (``run`` awaits it,
    ``post`` does not), and what it emitted is handed to ``emit`` on the loop when it ends. While
    a verb runs, the loop reads the transcript only for figures (a StatsUpdated: a snapshot).
    """

    def __init__(self, executor: Executor, emit: Callable[[EngineEvent], None]) -> None:
        self.executor = executor
        self.emit = emit
        self._events: queue.SimpleQueue[EngineEvent] = queue.SimpleQueue()  # made, not emitted yet
        self._last: Future[None] | None = None  # the verb posted last

    def buffer(self, event: EngineEvent) -> None:
        """The transcript's ``emit`` (called on the text thread)."""
        self._events.put(event)

    def post(self, verb: Callable[..., None], *args: Any) -> Future[None]:
        """Run ``verb(*args)`` after the verbs posted before it; its events are emitted when it ends."""
        loop = asyncio.get_running_loop()
        job = self.executor.submit(verb, *args)
        job.add_done_callback(lambda _: self._ended(loop))
        self._last = job
        return job

    async def run(self, verb: Callable[..., None], *args: Any) -> None:
        """``verb(*args)`` on the text thread; returns once it ran and its events were emitted."""
        try:
            await asyncio.wrap_future(self.post(verb, *args))
        finally:
            self.flush()

    async def drain(self) -> None:
        """Wait for every posted verb; their events are emitted."""
        if self._last is not None:
            await asyncio.wrap_future(self._last)
        self.flush()

    def settle(self) -> None:
        """On the loop, blocking: the verbs posted are done (a cancelled caller's included), their events emitted."""
        if self._last is not None:
            wait([self._last])
        self.flush()

    def _ended(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the text thread, as a verb ends: the loop emits its events (unless it was closed meanwhile)."""
        with contextlib.suppress(RuntimeError):  # "Event loop is closed"
            loop.call_soon_threadsafe(self.flush)

    def flush(self) -> None:
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return
            self.emit(event)
