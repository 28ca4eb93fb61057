"""The chat engine over a remote verifier (and, with a draftless client, the ``--api`` mode).

    from app.engine import ClientDraft, Draftless, EngineConfig, LinkConfig, RemoteChatEngine
    from drafts.data.conversations import Turn
    from drafts.decoding.config import DecodeConfig

    config = EngineConfig(LinkConfig("ws://127.0.0.1:8765"))
    engine = RemoteChatEngine(config, ClientDraft.load(checkpoint))   # or Draftless.of(runner): --api
    engine.subscribe(on_event)          # every event, idle LinkChanged included (on this loop)
    await engine.open()                 # connects in the background: LinkChanged(CONNECTING -> ONLINE)
    messages = [Turn("user", "Hi!")]
    async for event in engine.stream(messages, DecodeConfig(max_new_tokens=256)):
        ...                             # TokenGenerated(text, char_start), Repaired, StatsUpdated, ..., Finished
    messages += [Turn("assistant", finished.text), Turn("user", "And then?")]
    ...                                 # the next turn sends only its new tokens
    await engine.cancel()               # from another task: Finished(stop=CANCELLED), partial answer kept
    await engine.close()                # cancels a running stream first

The conversation is rendered with the target's chat template in one place
(:func:`drafts.target.chat.format_chat_after`: the last prompt and its answer keep the tokens they
were generated as, so a re-encoding that differs, such as SmolLM2's "\n\n", cannot cut the reuse
short); :class:`~app.engine.remote.RemoteEngine` then keeps the
longest common token prefix with the previous turn in the verifier (``Rewind``) and in the draft
(cut back, not reset), so an edited earlier message rewinds to where it differs.

The link is watched at all times, not only during a generation: after ``open()`` a connection is
kept (reconnected with backoff while idle), and every change is a :class:`LinkChanged`:
CONNECTING, ONLINE, DEGRADED (the smoothed round trip over ``LinkConfig.degraded_rtt_ms``),
OFFLINE (with the reason), RECONNECTING. During a generation the engine's own LinkLost /
Reconnecting / LinkRestored are translated the same way. A message sent while the verifier is
unreachable is answered at once offline (the draft, or the GGUF model) and repaired when the link
returns (:mod:`app.engine.generation`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from app.engine.chat import EngineInfo, Message
from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.draftless import Draftless
from app.engine.errors import EngineError, LinkDownError, VerifierRefusedError
from app.engine.events import (
    EngineEvent,
    Finished,
    LinkChanged,
    LinkLost,
    LinkRestored,
    LinkState,
    Reconnecting,
    StatsUpdated,
)
from app.engine.remote import RemoteEngine
from drafts.decoding.config import DecodeConfig
from drafts.errors import ConfigError
from drafts.target.chat import Said, format_chat_after

RTT_DECAY = 0.7  # weight of the past in the idle round trip (websockets' keepalive latency)
RECOVER = 0.8  # DEGRADED ends below this share of the threshold (no flapping at the edge)


class RemoteChatEngine:
    """A :class:`~app.engine.chat.ChatEngine` over :class:`RemoteEngine`; see the module docstring."""

    def __init__(self, config: EngineConfig, draft: ClientDraft | Draftless, tokenizer: Any = None) -> None:
        self.tokenizer = tokenizer if tokenizer is not None else draft.tokenizer
        if self.tokenizer is None:
            raise ConfigError("the chat engine needs the target's tokenizer (ClientDraft.of / Draftless.of give it)")
        self.config = config
        self.draft = draft
        self.engine = RemoteEngine(config, draft)
        self.engine.listen(self._follow)
        self._subscribers: list[Callable[[EngineEvent], None]] = []
        self.state: LinkState | None = None
        self.rtt_ms: float | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._streaming = False
        self._closed = False
        self._said: Said | None = None  # the last prompt and its answer, as text and tokens in step

    def describe(self) -> EngineInfo:
        draft, url = self.draft, self.config.link.url
        if isinstance(draft, Draftless):
            return EngineInfo("api", "none", draft.target.name, "cpu", url)
        kind = draft.drafter.model.kind
        return EngineInfo("remote", kind, draft.target.name, draft.device.type, url, stream=self.config.stream)

    def subscribe(self, callback: Callable[[EngineEvent], None]) -> None:
        self._subscribers.append(callback)

    async def open(self) -> None:
        """Load the offline model (if any) and start keeping a connection (in the background)."""
        await self.engine.open()
        self._closed = False
        if self._keeper is None:
            self._set(LinkState.CONNECTING)
            self._keeper = asyncio.create_task(self._keep())

    async def close(self) -> None:
        """Cancel a running answer (it ends with Finished(CANCELLED)), stop watching, disconnect."""
        self._closed = True
        await self._stop_keeping()
        await self.engine.close()
        await self._stop_keeping()  # one a stream's end may have started meanwhile

    async def cancel(self) -> None:
        await self.engine.cancel()

    async def stream(self, messages: Sequence[Message], decode: DecodeConfig) -> AsyncIterator[EngineEvent]:
        """The next assistant message after ``messages``: its events, ending with Finished."""
        if not messages:
            raise ConfigError("the conversation is empty; pass at least the user's message")
        said = format_chat_after(self.tokenizer, messages, self._said)
        self._said = None  # until this answer is complete and known
        await self._stop_keeping()  # the generation reconnects by itself while it runs
        self._streaming = True
        try:
            async with contextlib.aclosing(self.engine.stream(list(said.tokens), decode)) as events:
                async for event in events:
                    if isinstance(event, Finished):  # the next turn extends these tokens
                        self._said = said.answered(event.tokens, event.text)
                    yield event  # a consumer that stops reading stops the generation (aclosing)
        finally:
            self._streaming = False
            if not self._closed:
                self._keeper = asyncio.create_task(self._keep())

    # -- link state ------------------------------------------------------------------------------
    def _follow(self, event: EngineEvent) -> None:
        """Every event of the engine: to the subscribers, then what it says about the link."""
        for callback in list(self._subscribers):
            callback(event)
        if isinstance(event, LinkLost):
            self._set(LinkState.OFFLINE, reason=event.reason)
        elif isinstance(event, Reconnecting):
            self._set(LinkState.RECONNECTING, reason=f"attempt {event.attempt}")
        elif isinstance(event, LinkRestored):
            self._set(self._online_state(self.rtt_ms))
        elif isinstance(event, StatsUpdated):
            self._measured(event.rtt_ms, smoothed=True)
        elif self._streaming and self.state in (LinkState.CONNECTING, LinkState.RECONNECTING) and self._up:
            self._set(self._online_state(self.rtt_ms))  # a generation's own (re)connection

    @property
    def _up(self) -> bool:
        return self.engine._session is not None and self.engine._session.up

    def _set(self, state: LinkState, reason: str = "") -> None:
        if state is self.state:
            return
        self.state = state
        self.engine.publish(LinkChanged(state, self.rtt_ms, reason))

    def _measured(self, rtt_ms: float | None, smoothed: bool) -> None:
        if rtt_ms is None:
            return
        if smoothed or self.rtt_ms is None:
            self.rtt_ms = rtt_ms
        else:
            self.rtt_ms = RTT_DECAY * self.rtt_ms + (1 - RTT_DECAY) * rtt_ms
        if self.state in (LinkState.ONLINE, LinkState.DEGRADED):
            self._set(self._online_state(self.rtt_ms))

    def _online_state(self, rtt_ms: float | None) -> LinkState:
        threshold = self.config.link.degraded_rtt_ms
        if rtt_ms is None:
            return LinkState.ONLINE
        if self.state is LinkState.DEGRADED:
            return LinkState.DEGRADED if rtt_ms > RECOVER * threshold else LinkState.ONLINE
        return LinkState.DEGRADED if rtt_ms > threshold else LinkState.ONLINE

    # -- the connection while idle ---------------------------------------------------------------
    async def _keep(self) -> None:
        """Keep a connection while no generation runs: watch it, reconnect with backoff."""
        link = self.config.link
        delay = 0.0
        while True:
            session = self.engine.session
            if session.up:
                delay = 0.0
                self._set(self._online_state(self.rtt_ms))
                await self._watch()
                continue
            if self.state in (LinkState.ONLINE, LinkState.DEGRADED):
                reason = session.link.lost_reason if session.link is not None else "disconnected"
                self._set(LinkState.OFFLINE, reason=reason)
            await asyncio.sleep(delay)
            if self.state is LinkState.OFFLINE:
                self._set(LinkState.RECONNECTING)
            try:
                await session.connect()
            except VerifierRefusedError as exc:  # retrying will not help soon: say why, retry slowly
                self._set(LinkState.OFFLINE, reason=str(exc))
                delay = link.backoff_max_s
            except (LinkDownError, EngineError) as exc:
                if self.state is not LinkState.RECONNECTING:  # attempts go on quietly until one succeeds
                    self._set(LinkState.OFFLINE, reason=str(exc))
            delay = min(max(2 * delay, link.backoff_initial_s), link.backoff_max_s)

    async def _watch(self) -> None:
        """Until the link is lost: the keepalive's round trip, every ping interval."""
        link = self.engine.session.link
        assert link is not None
        interval = self.config.link.ping_interval_s
        while not link.lost.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(link.lost.wait(), interval)
            latency = getattr(link.ws, "latency", 0.0)
            if latency:
                self._measured(1e3 * float(latency), smoothed=False)

    async def _stop_keeping(self) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
