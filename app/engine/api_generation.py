"""One generation decoded by the server alone, streamed token by token ("API streaming").

    start    keep the session's common prefix with the prompt (a chat's next turn), Prefill the
             rest of the prompt but its newest token. A verifier that cannot be reached fails the
             message at once (VerifierUnavailableError, after one attempt): nothing here can write
             an answer, so waiting out a reconnect deadline would only keep the user waiting
    stream   Generate after the newest token; each Generated part is shown as it arrives
             (every token is the target's own: TokenSource.TARGET)
    drop     a dead link ends nothing the user saw: reconnect with backoff (resume, or replay of
             the confirmed history) and ask again for what is left. Nothing is written meanwhile:
             unlike the speculative engine, this client has no model of its own.

A stop string is checked here (the server knows only stop tokens and the length): once it ends
the output, later parts of the same stream are ignored (the server's session is rewound by the
next generation's start).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor

import torch

from app.engine.draftless import Draftless
from app.engine.errors import LinkDownError, VerifierRefusedError, VerifierUnavailableError
from app.engine.events import EngineEvent, Finished, LinkLost, LinkRestored, StatsUpdated
from app.engine.progress import Progress
from app.engine.session import VerifierSession
from app.engine.transcript import Scribe, Transcript
from drafts.decoding.config import DecodeConfig
from drafts.decoding.stopping import StopReason
from drafts.errors import ErrorCode
from drafts.protocol import Generate, Generated


class ApiGeneration:
    """See the module docstring; ``await run()`` returns the Finished event (also emitted)."""

    def __init__(
        self,
        prompt: list[int],
        decode: DecodeConfig,
        client: Draftless,
        session: VerifierSession,
        text: Executor,
        emit: Callable[[EngineEvent], None],
    ) -> None:
        self.scribe = Scribe(text, emit)  # the parts' text is decoded on the text thread, off the loop
        self.transcript = Transcript.begin(prompt, decode, client.stop_ids, client.decode, self.scribe.buffer)
        self.decode, self.client, self.session, self.emit = decode, client, session, emit
        self.progress = Progress(self.transcript, session)
        self.reconnect_s = max(session.config.link.connect_timeout_s, session.config.offline_wait_s)

    async def run(self) -> Finished:
        await self._start()
        while self.transcript.stop is None:
            try:
                await self._stream()
            except LinkDownError as exc:
                await self._reconnect(str(exc))
        return self.finish()

    def finish(self, stop: StopReason | None = None) -> Finished:
        """The Finished event (emitted, after a last StatsUpdated); ``stop`` overrides (CANCELLED)."""
        self.scribe.settle()
        if stop is not None:
            self.transcript.stop = stop
        self.emit(self.stats())
        finished = self._finished()
        self.emit(finished)
        return finished

    def stats(self) -> StatsUpdated:
        return self.progress.stats(None)

    async def _start(self) -> None:
        history = self.transcript.history
        if not self.session.up:
            await self._connect()
        try:
            await self.session.start(history)
        except LinkDownError as exc:  # lost while the prompt went up: reconnect as mid-stream
            await self._reconnect(str(exc))
        except VerifierRefusedError as exc:
            if exc.code is not ErrorCode.SESSION_UNKNOWN:
                raise
            await self.session.replay(history)

    async def _connect(self) -> None:
        """One attempt at the verifier; unreachable: VerifierUnavailableError at once (see the module docstring)."""
        try:
            await self.session.connect()
        except LinkDownError as exc:
            raise VerifierUnavailableError(
                f"no verifier at {self.session.config.link.url} ({exc}); in --api mode the server writes every "
                "token, so nothing can be answered without it: start moa-server there, check the URL or the "
                "network, then send the message again"
            ) from exc

    async def _stream(self) -> None:
        t = self.transcript
        left = self.decode.max_new_tokens - len(t.confirmed)
        if left <= 0 or len(t.context) >= self.session.capabilities.max_context:
            t.stop = StopReason.MAX_TOKENS if left <= 0 else StopReason.CONTEXT
            return
        stops = torch.tensor(sorted(self.client.stop_ids), dtype=torch.int64)
        request = Generate(0, t.root, left, stops, self.decode.sampling)
        try:
            reply = await self.session.ask(request, self._show)
            assert isinstance(reply, Generated)
            self._show(reply)
        finally:
            await self.scribe.drain()  # every part shown (and a stop string found) before going on
        if t.stop is None and len(t.context) >= self.session.capabilities.max_context:
            t.stop = StopReason.CONTEXT

    def _show(self, part: Generated) -> None:
        """A part arrived (on the loop): its tokens are shown from the text thread, in order."""
        self.scribe.post(self._show_now, part.tokens.tolist())

    def _show_now(self, tokens: list[int]) -> None:
        for token in tokens:
            if self.transcript.stop is not None:
                return  # a stop string ended the output: the rest of this stream is dropped
            self.progress.forwards += 1
            self.transcript.confirm_round([], [], token)

    async def _reconnect(self, reason: str) -> None:
        """Back within ``reconnect_s`` (the draftless client has nothing to write meanwhile), or
        VerifierUnavailableError: a draftless reconnect has a deadline."""
        lost_at = time.perf_counter()
        self.emit(LinkLost(reason, "nothing (draftless)"))
        deadline = lost_at + self.reconnect_s
        resumed, replayed = await self.session.reconnect(self.transcript.history, deadline=deadline)
        self.emit(LinkRestored(resumed, time.perf_counter() - lost_at, replayed))

    def _finished(self) -> Finished:
        t = self.transcript
        return Finished(tuple(t.output), t.stop, self.progress.totals(None), t.answer)
