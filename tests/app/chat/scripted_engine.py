"""A scripted ChatEngine for fast app tests and the UI benchmark: real event objects, no model.

It writes ``answer`` word by word in rounds, as a speculative engine would: ``gamma`` accepted
draft tokens, a refused draft (DraftRejected) and the target's own token. While "offline"
(``set_online(False)``, or the link switch's ``offline`` preset) it writes OFFLINE tokens; when
back online it repairs that span (Repaired: the first half kept, the rest replaced by one target
token) and goes on. It honours ``cancel()``, reports link events to subscribers at any time
(every event goes to subscribers, as the contract says), and can fail on ``open`` or ``stream``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from app.engine.chat import EngineInfo, Message
from app.engine.events import (
    DraftRejected,
    EngineEvent,
    Finished,
    GenerationStats,
    LinkChanged,
    LinkLost,
    LinkRestored,
    LinkState,
    OfflineBudgetReached,
    Repaired,
    StatsUpdated,
    TokenGenerated,
)
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason

ANSWER = (
    "Speculative decoding lets a small draft propose tokens that the target checks in one pass.\n\n"
    "```python\nprint('accepted tokens are green')\n```\n\n"
    "When the link drops, the draft keeps writing offline; the verifier repairs that span later."
)


def words(text: str) -> list[str]:
    """The answer's "tokens": each word with the spaces before it (every character kept)."""
    return re.findall(r"\s*\S+|\s+$", text, flags=re.S)


@dataclass
class ScriptedEngine:
    answer: str = ANSWER
    tokens_per_s: float = 0.0  # 0: as fast as the loop runs (one await per token)
    gamma: int = 3  # accepted draft tokens per round before the target's own
    online: bool = True
    fail_open: BaseException | None = None
    fail_stream: BaseException | None = None  # raised before the first token
    hold_after: int | None = None  # stop writing after this many tokens until released (or cancelled)
    offline_budget: int = 0  # 0: no limit
    stats_every: int = 8  # a StatsUpdated every this many tokens
    fixed_speed: float | None = None  # report this tokens/s (and the wall time it implies): snapshots
    speculative_stream: bool = False  # describe() says it streams speculatively (EngineInfo.stream)
    calls: list[list[Message]] = field(default_factory=list)
    decodes: list[DecodeConfig] = field(default_factory=list)
    opened: bool = False
    closed: bool = False
    _subscribers: list[Callable[[EngineEvent], None]] = field(default_factory=list)
    _cancel: asyncio.Event = field(default_factory=asyncio.Event)
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    _online_again: asyncio.Event = field(default_factory=asyncio.Event)

    def describe(self) -> EngineInfo:
        return EngineInfo("demo", "moa", "SmolLM2-135M", "cpu", "ws://127.0.0.1:0", stream=self.speculative_stream)

    def subscribe(self, callback: Callable[[EngineEvent], None]) -> None:
        self._subscribers.append(callback)

    async def open(self) -> None:
        if self.fail_open is not None:
            self._tell(LinkChanged(LinkState.OFFLINE, None, str(self.fail_open)))
            raise self.fail_open
        self.opened = True
        self._tell(LinkChanged(LinkState.ONLINE if self.online else LinkState.OFFLINE, 12.0))

    async def close(self) -> None:
        await self.cancel()
        self.closed = True

    async def cancel(self) -> None:
        self._cancel.set()

    def release(self) -> None:
        """Let a stream held at ``hold_after`` go on."""
        self._release.set()

    def set_online(self, online: bool) -> None:
        """The link goes down or comes back (idle or mid-answer): subscribers hear it at once."""
        if online == self.online:
            return
        self.online = online
        if online:
            self._online_again.set()
            self._tell(LinkRestored(resumed=True, down_s=1.0, replayed=0))
            self._tell(LinkChanged(LinkState.ONLINE, 12.0))
        else:
            self._online_again.clear()
            self._tell(LinkLost("the link was cut", "draft"))
            self._tell(LinkChanged(LinkState.OFFLINE, None, "the link was cut"))

    async def stream(self, messages: Sequence[Message], decode: DecodeConfig) -> AsyncIterator[EngineEvent]:
        self.calls.append(list(messages))
        self.decodes.append(decode)
        self._cancel.clear()
        if self.fail_stream is not None:
            raise self.fail_stream
        writer = _Writer(self)
        async for event in writer.run(words(self.answer)[: decode.max_new_tokens]):
            self._tell(event)
            yield event

    def _tell(self, event: EngineEvent) -> None:
        for callback in self._subscribers:
            callback(event)


@dataclass
class _Writer:
    """One answer's state: the output so far and the offline span waiting for repair."""

    engine: ScriptedEngine
    texts: list[str] = field(default_factory=list)
    sources: list[TokenSource] = field(default_factory=list)
    offline_from: int | None = None
    rounds: int = 0
    accepted: int = 0
    offline_total: int = 0
    kept_total: int = 0
    chars: int = 0  # length of the text so far
    started: float = field(default_factory=time.perf_counter)

    async def run(self, script: list[str]) -> AsyncIterator[EngineEvent]:
        interval = 1.0 / self.engine.tokens_per_s if self.engine.tokens_per_s > 0 else 0.0
        next_at = time.perf_counter()
        for index, word in enumerate(script):
            if self.engine._cancel.is_set():
                break
            if self.engine.hold_after is not None and index == self.engine.hold_after:
                await self._wait_for(self.engine._release)
                self.engine._release.clear()  # the next hold waits for the next release
            for event in await self._before_token():
                yield event
            if self.engine._cancel.is_set():
                break
            for event in self._token(word):
                yield event
            if len(self.texts) % self.engine.stats_every == 0:
                yield self._stats()
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
        if self.offline_from is not None and self.engine.online:
            yield self._repair()
        yield self._stats()
        stop = StopReason.CANCELLED if self.engine._cancel.is_set() else StopReason.EOS
        yield Finished(tuple(range(len(self.texts))), stop, self._generation_stats(), "".join(self.texts))

    async def _wait_for(self, event: asyncio.Event) -> None:
        waiters = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(self.engine._cancel.wait())]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()

    async def _before_token(self) -> list[EngineEvent]:
        events: list[EngineEvent] = []
        if self.offline_from is not None and self.engine.online:
            events.append(self._repair())
        offline = len(self.texts) - (self.offline_from or len(self.texts))
        if not self.engine.online and self.engine.offline_budget and offline >= self.engine.offline_budget:
            events.append(OfflineBudgetReached(self.engine.offline_budget))
            await self._wait_for(self.engine._online_again)
        return events

    def _token(self, word: str) -> list[EngineEvent]:
        position = len(self.texts)
        char_start = self.chars
        self.chars += len(word)
        if not self.engine.online:
            if self.offline_from is None:
                self.offline_from = position
            source = TokenSource.OFFLINE
            self.offline_total += 1
        elif (position + 1) % (self.engine.gamma + 1) == 0:
            source = TokenSource.TARGET
            self.rounds += 1
        else:
            source = TokenSource.DRAFT_ACCEPTED
            self.accepted += 1
        events: list[EngineEvent] = []
        if source is TokenSource.TARGET:
            events.append(DraftRejected(position, (position,)))
        self.texts.append(word)
        self.sources.append(source)
        events.append(TokenGenerated(position, position, source, word, char_start))
        return events

    def _repair(self) -> Repaired:
        """The offline span: its first half confirmed, the rest replaced by one target token."""
        assert self.offline_from is not None
        start, end = self.offline_from, len(self.texts)
        kept = (end - start) // 2
        replaced_text = "".join(self.texts[start + kept :]).upper()
        texts = (*self.texts[start : start + kept], replaced_text)
        sources = (*[TokenSource.DRAFT_ACCEPTED] * kept, TokenSource.TARGET)
        char_start = sum(len(t) for t in self.texts[:start])
        char_end = sum(len(t) for t in self.texts)
        self.texts[start:end] = list(texts)
        self.sources[start:end] = list(sources)
        self.chars = sum(len(t) for t in self.texts)
        self.offline_from = None
        self.kept_total += kept
        return Repaired(start, end, tuple(range(start, start + len(texts))), sources, kept, texts, char_start, char_end)

    def _wall(self) -> float:
        if self.engine.fixed_speed is not None:
            return max(1e-6, len(self.texts) / self.engine.fixed_speed)
        return max(1e-6, time.perf_counter() - self.started)

    def _stats(self) -> StatsUpdated:
        n = max(1, len(self.texts))
        wall = self._wall()
        return StatsUpdated(
            tau=(self.accepted + self.rounds) / max(1, self.rounds),
            acceptance_rate=self.accepted / max(1, self.accepted + self.rounds),
            acceptance_by_depth=(0.9, 0.75, 0.6)[: self.engine.gamma],
            rtt_ms=12.0 if self.engine.online else None,
            tokens_per_s=len(self.texts) / wall,
            round_trips=self.rounds,
            round_trips_per_100=100 * self.rounds / n,
            bytes_up_per_token=40.0,
            bytes_down_per_token=1152.0,
            draft_ms=3.0,
            verify_ms=20.0,
            new_tokens=len(self.texts),
            offline_tokens=self.offline_total,
        )

    def _generation_stats(self) -> GenerationStats:
        wall = self._wall()
        unverified = len(self.texts) - self.offline_from if self.offline_from is not None else 0
        return GenerationStats(
            new_tokens=len(self.texts),
            accepted=sum(s is TokenSource.DRAFT_ACCEPTED for s in self.sources),
            target=sum(s is TokenSource.TARGET for s in self.sources),
            unverified=unverified,
            offline_tokens=self.offline_total,
            kept_after_repair=self.kept_total,
            round_trips=self.rounds,
            verify_rounds=self.rounds,
            bytes_up=40 * len(self.texts),
            bytes_down=1152 * len(self.texts),
            wall_s=wall,
            ttft_s=0.01,
            longest_pause_s=0.0,
            mean_gamma=float(self.engine.gamma),
            drafted_ahead=0,
            rtt_ms=12.0,
        )


class ScriptedLink:
    """The demo's link switch for tests: ``offline`` takes the scripted engine offline, any other preset back."""

    presets: tuple[str, ...] = ("lan", "wifi", "5g", "4g", "3g", "offline")

    def __init__(self, engine: ScriptedEngine, preset: str = "lan") -> None:
        self.engine = engine
        self.preset = preset
        self.changes: list[str] = []
        self._listeners: list[Callable[[str], None]] = []

    def set_preset(self, name: str) -> None:
        self.preset = name
        self.changes.append(name)
        self.engine.set_online(name != "offline")
        for listener in self._listeners:
            listener(name)

    def subscribe(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)
