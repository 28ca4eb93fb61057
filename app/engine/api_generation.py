"""One generation decoded by the server alone, streamed token by token ("API streaming").

    start    open (or rewind) the session, Prefill every prompt token but the newest
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

import torch

from app.engine.draftless import Draftless
from app.engine.errors import LinkDownError
from app.engine.events import EngineEvent, Finished, GenerationStats, LinkLost, LinkRestored
from app.engine.session import VerifierSession
from app.engine.transcript import Transcript
from drafts.decoding.config import DecodeConfig
from drafts.decoding.stopping import StopReason
from drafts.protocol import Generate, Generated


class ApiGeneration:
    """See the module docstring; ``await run()`` returns the Finished event (also emitted)."""

    def __init__(
        self,
        prompt: list[int],
        decode: DecodeConfig,
        client: Draftless,
        session: VerifierSession,
        emit: Callable[[EngineEvent], None],
    ) -> None:
        self.transcript = Transcript.begin(prompt, decode, client.stop_ids, client.decode, emit)
        self.decode, self.client, self.session, self.emit = decode, client, session, emit
        self.forwards = 0
        traffic = session.traffic
        self._traffic_at_start = (traffic.bytes_up, traffic.bytes_down, traffic.round_trips)

    async def run(self) -> Finished:
        await self._start()
        while self.transcript.stop is None:
            try:
                await self._stream()
            except LinkDownError as exc:
                await self._reconnect(str(exc))
        finished = self._finished()
        self.emit(finished)
        return finished

    async def _start(self) -> None:
        prompt = self.transcript.prompt
        while True:
            try:
                await self.session.start()
                await self.session.prefill(prompt[:-1])
                self.forwards = 1 if len(prompt) > 1 else 0  # the prefill's forward(s): counted as one, as for ar
                return
            except LinkDownError:
                continue  # start() reconnects, within the connect timeout

    async def _stream(self) -> None:
        t = self.transcript
        left = self.decode.max_new_tokens - len(t.confirmed)
        if left <= 0 or len(t.context) >= self.session.capabilities.max_context:
            t.stop = StopReason.MAX_TOKENS if left <= 0 else StopReason.CONTEXT
            return
        stops = torch.tensor(sorted(self.client.stop_ids), dtype=torch.int64)
        request = Generate(0, t.root, left, stops, self.decode.sampling)
        reply = await self.session.ask(request, self._show)
        assert isinstance(reply, Generated)
        self._show(reply)
        if t.stop is None and len(t.context) >= self.session.capabilities.max_context:
            t.stop = StopReason.CONTEXT

    def _show(self, part: Generated) -> None:
        for token in part.tokens.tolist():
            if self.transcript.stop is not None:
                return  # a stop string ended the output: the rest of this stream is dropped
            self.forwards += 1
            self.transcript.confirm_round([], [], token)

    async def _reconnect(self, reason: str) -> None:
        lost_at = time.perf_counter()
        self.emit(LinkLost(reason, "nothing (draftless)"))
        resumed, replayed = await self.session.reconnect(self.transcript.history)
        self.emit(LinkRestored(resumed, time.perf_counter() - lost_at, replayed))

    def _finished(self) -> Finished:
        t, traffic = self.transcript, self.session.traffic
        up, down, trips = self._traffic_at_start
        stats = GenerationStats(
            new_tokens=len(t.output),
            accepted=0,
            target=t.counts.target,
            unverified=0,
            offline_tokens=0,
            kept_after_repair=0,
            round_trips=traffic.round_trips - trips,
            verify_rounds=self.forwards - (1 if len(t.prompt) > 1 else 0),
            bytes_up=traffic.bytes_up - up,
            bytes_down=traffic.bytes_down - down,
            wall_s=time.perf_counter() - t.started,
            ttft_s=None if t.first_token_at is None else t.first_token_at - t.started,
            longest_pause_s=t.longest_pause_s,
            mean_gamma=0.0,
            drafted_ahead=0,
            rtt_ms=None,
        )
        return Finished(tuple(t.output), t.stop, stats)
