"""The session with the verifier, across connections: open, resume or replay, and count the traffic.

    start()            a fresh, empty session (a new one, or the open one rewound to 0)
    reconnect(history) after a drop, with backoff: resume the session (the server keeps it for its
                       grace period, cut back to the ``history`` this client holds), or open a new
                       one and replay ``history`` (a Prefill whose vectors the draft already has)
    ask(request)       on the current connection; LinkDownError when there is none
    prefill(tokens)    append tokens in chunks whose replies stay under PREFILL_FRAME_BYTES: a big
                       frame holds up the keepalive's pong behind it (on 3g, 200 KB of vectors take
                       1.6 s, past the 1 s pong timeout), and a link killed that way would be killed
                       again by every replay of the same prefill

The draft's needs are settled on the first Hello: a MoA draft asks for the memory vectors the
server computes (20x fewer bytes than the raw KV, see ``server_stub/backend/draft_memory.py``);
a server without the client's MoA checkpoint refuses that with DRAFT_UNSUPPORTED, and the
client asks again for the raw all-layer KV, which it compresses itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable

import torch

from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.draftless import Draftless
from app.engine.errors import LinkDownError, VerifierRefusedError, VerifierUnavailableError
from app.engine.events import EngineEvent, Reconnecting
from app.engine.link import Link, OnPart, Reply, Request, Traffic
from drafts.errors import ErrorCode
from drafts.protocol import PROTOCOL_VERSION, Capabilities, Hello, Prefill, Prefilled, Rewind

PREFILL_FRAME_BYTES = 48_000  # the largest Prefilled reply asked for: ~0.4 s at 1 Mbit/s (3g)
FIRST_PREFILL_CHUNK = 16  # tokens in the first chunk, before the reply's bytes per token are known
TakePrefilled = Callable[[list[int], Prefilled], Awaitable[None]]


class VerifierSession:
    """See the module docstring. Lives on the event loop that owns the socket."""

    def __init__(
        self, config: EngineConfig, draft: ClientDraft | Draftless, emit: Callable[[EngineEvent], None]
    ) -> None:
        self.config = config
        self.draft = draft
        self.emit = emit
        self.traffic = Traffic()
        self.link: Link | None = None
        self.session_id: str | None = None
        self.compressed = draft.wants_memory  # ask for server-compressed MoA memory until refused
        self.committed = 0  # tokens the verifier holds for this session, as last confirmed
        self.prefill_chunk = FIRST_PREFILL_CHUNK  # tokens per Prefill, from the last reply's bytes per token

    @property
    def capabilities(self) -> Capabilities:
        assert self.link is not None and self.link.welcome is not None, "connect first"
        return self.link.welcome.capabilities

    @property
    def up(self) -> bool:
        return self.link is not None and not self.link.lost.is_set()

    # -- requests --------------------------------------------------------------------------------
    async def ask(self, request: Request, on_part: OnPart | None = None) -> Reply:
        """Send ``request`` (its request_id is assigned here) and wait for the reply (parts to ``on_part``)."""
        link = self.link
        if link is None or link.lost.is_set():
            raise LinkDownError(link.lost_reason if link is not None else "not connected")
        request = dataclasses.replace(request, request_id=link.new_request_id())
        reply = await link.ask(request, on_part)
        self.committed = reply.committed
        return reply

    async def prefill(self, tokens: list[int], take: TakePrefilled | None = None) -> None:
        """Append ``tokens`` (chunked, see the module docstring); each chunk and its reply go to ``take``."""
        done = 0
        while done < len(tokens):
            piece = tokens[done : done + self.prefill_chunk]
            before = self.traffic.bytes_down
            reply = await self.ask(Prefill(0, torch.tensor(piece, dtype=torch.int64)))
            assert isinstance(reply, Prefilled)
            per_token = max(1.0, (self.traffic.bytes_down - before) / len(piece))
            self.prefill_chunk = max(1, int(PREFILL_FRAME_BYTES // per_token))
            if take is not None:
                await take(piece, reply)
            done += len(piece)

    async def start(self) -> None:
        """An empty session for a new generation, connecting first if need be (within connect_timeout_s)."""
        if self.up:
            await self.ask(Rewind(0, 0))  # always: a cancelled generation's late replies may have moved it
            return
        await self.reconnect([], deadline=time.perf_counter() + self.config.link.connect_timeout_s)

    async def replay(self, history: list[int]) -> None:
        """The server lost the session's state (evicted): rebuild it from ``history``."""
        await self.ask(Rewind(0, 0))  # revives an evicted session, empty
        await self.prefill(history)

    # -- (re)connecting --------------------------------------------------------------------------
    async def reconnect(self, history: list[int], deadline: float | None = None) -> tuple[bool, int]:
        """Connect with backoff until the session holds ``history``: (resumed, tokens replayed).

        Raises VerifierUnavailableError past ``deadline`` (perf_counter), VerifierRefusedError when
        the server refuses the session (another target, a bad token: retrying cannot help).
        """
        link = self.config.link
        delay, attempt = 0.0, 0
        while True:
            attempt += 1
            if attempt > 1 or self.session_id is not None:  # the engine's very first connect is no REconnect
                self.emit(Reconnecting(attempt, delay))
            await asyncio.sleep(delay)
            try:
                return await self._attempt(history)
            except LinkDownError as exc:
                if deadline is not None and time.perf_counter() + delay > deadline:
                    raise VerifierUnavailableError(
                        f"no verifier at {link.url} ({exc}); start moa-server there or check the URL"
                    ) from exc
            delay = min(max(2 * delay, link.backoff_initial_s), link.backoff_max_s)

    async def _attempt(self, history: list[int]) -> tuple[bool, int]:
        await self.drop()
        resume = self.session_id is not None
        hello = Hello(
            PROTOCOL_VERSION,
            self.config.client_name,
            self.draft.target.to_dict(),
            self.draft.draft_id,
            self.draft.needs(self.compressed),
            resume_session=self.session_id,
            resume_length=len(history) if resume else None,
        )
        try:
            self.link = await Link.open(self.config.link, hello, self.traffic)
        except VerifierRefusedError as exc:
            if exc.code is ErrorCode.DRAFT_UNSUPPORTED and self.compressed:
                self.compressed, self.session_id = False, None  # other needs: a new session, the raw KV
                return await self._attempt(history)
            raise
        welcome = self.link.welcome
        assert welcome is not None
        self.session_id, self.committed = welcome.session_id, welcome.committed
        if welcome.resumed and welcome.committed == len(history):
            return True, 0
        if welcome.committed:
            await self.ask(Rewind(0, 0))
        await self.prefill(history)
        return False, len(history)

    async def drop(self) -> None:
        """Let go of the current connection, if any (the session stays resumable)."""
        if self.link is not None:
            link, self.link = self.link, None
            await link.abort()

    async def close(self) -> None:
        """End the session (Bye) and close the connection."""
        if self.link is not None:
            link, self.link = self.link, None
            await link.close()
        self.session_id = None
