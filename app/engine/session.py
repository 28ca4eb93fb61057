"""The session with the verifier, across connections: open, resume or replay, and count the traffic.

    held               the tokens the server's session holds, as far as this client knows
    hold(history)      make the session hold exactly ``history`` (a conversation's next prompt): keep
                       the longest common prefix with ``held`` (Rewind to it), Prefill the rest,
                       pipelined behind the Rewind: one round trip. Each turn of a chat thus sends
                       only its new tokens.
    start(history)     the same at the start of a generation, connecting first (within connect_timeout_s)
    reconnect(history) after a drop, with backoff: resume the session (the server keeps it for its
                       grace period, cut back to the ``held`` prefix this client knows), or open a
                       new one; then ``hold(history)`` (a replay, whose vectors the draft mostly has)
    ask(request)       on the current connection; LinkDownError when there is none
    prefill(tokens)    append tokens in chunks, two in flight (the next is sent as a reply comes), so
                       a prompt of any length costs one round trip, yet the replies in flight stay
                       under PREFILL_FRAME_BYTES, the most that can queue ahead of the keepalive's
                       pong: a big backlog holds the pong up (on 3g, 200 KB of vectors take 1.6 s,
                       past the 1 s pong timeout), and a link killed that way would be killed again
                       by every replay of the same prefill. At a generation's start, with a server
                       that keeps vectors (``Capabilities.later``): the prompt as one Prefill(later)
                       and the first Verify behind it, the vectors fetched after the first token
                       (:mod:`app.engine.later`)

The draft's needs are settled on the first Hello: a MoA draft asks for the memory vectors the
server computes (20x fewer bytes than the raw KV, see ``server_stub/backend/draft_memory.py``);
a server without the client's MoA checkpoint refuses that with DRAFT_UNSUPPORTED, and the
client asks again for the raw all-layer KV, which it compresses itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

import torch

from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.draftless import Draftless
from app.engine.errors import LinkDownError, VerifierRefusedError, VerifierUnavailableError
from app.engine.events import EngineEvent, Reconnecting
from app.engine.later import Later, prefill_later
from app.engine.link import Link, OnPart, Reply, Request, Traffic
from drafts.errors import ErrorCode
from drafts.protocol import (
    PROTOCOL_VERSION,
    Capabilities,
    Fetch,
    Fetched,
    Generate,
    Generated,
    Hello,
    Prefill,
    Prefilled,
    Rewind,
    Rewound,
    Verified,
    Verify,
)
from drafts.target.chat import common_prefix

PREFILL_FRAME_BYTES = 48_000  # Prefilled replies in flight at most: ~0.4 s at 1 Mbit/s (3g)
PREFILL_PIPELINE = 2  # Prefill chunks in flight at once, each asking for PREFILL_FRAME_BYTES / PREFILL_PIPELINE
FIRST_PREFILL_CHUNK = 16  # tokens in the first chunk, before the reply's bytes per token are known
TakePrefilled = Callable[[int, list[int], Prefilled], Awaitable[None]]  # (position of the first, tokens, reply)
TakeLater = Callable[[Later], None]  # a prompt's vectors still to come, for the draft (Intake.later)


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
        self.held: list[int] = []  # ... and which (exact unless ``unsure``)
        self.unsure = False  # a request was abandoned (cancelled) before its reply: ``held`` may be stale
        self.prefill_chunk = FIRST_PREFILL_CHUNK  # tokens per Prefill, from the last reply's bytes per token
        self.prefill_sent = 0  # prompt tokens sent by Prefill since this session object was made (for the bench)
        self.failed = ""  # why the last connection attempt failed ("" once one succeeded)

    @property
    def capabilities(self) -> Capabilities:
        assert self.link is not None and self.link.welcome is not None, "connect first"
        return self.link.welcome.capabilities

    @property
    def up(self) -> bool:
        return self.link is not None and not self.link.lost.is_set()

    @property
    def keeps_vectors(self) -> bool:
        """Whether the server keeps a Prefill's vectors for Fetch (``Capabilities.later``; older servers: no)."""
        return self.up and self.capabilities.later

    # -- requests --------------------------------------------------------------------------------
    async def ask(
        self,
        request: Request,
        on_part: OnPart | None = None,
        pipelined: bool = False,
        on_id: Callable[[int], None] | None = None,
    ) -> Reply:
        """Send ``request`` (its request_id is assigned here, and told to ``on_id``) and wait for the reply
        (parts to ``on_part``); ``pipelined``: behind a request in flight, on its round trip
        (:class:`~app.engine.link.Traffic`)."""
        link = self.link
        if link is None or link.lost.is_set():
            raise LinkDownError(link.lost_reason if link is not None else "not connected")
        request = dataclasses.replace(request, request_id=link.new_request_id())
        if on_id is not None:
            on_id(request.request_id)  # a proposing Generate's Propose messages name it
        generated: list[int] = []  # a Generate's tokens, streamed parts and reply

        def collect(part: Generated) -> None:
            generated.extend(part.tokens.tolist())
            if on_part is not None:
                on_part(part)

        try:
            reply = await link.ask(request, collect if isinstance(request, Generate) else on_part, pipelined)
        except asyncio.CancelledError:
            # its reply may still move the session (a Fetch's moves nothing): the next hold() rewinds explicitly
            self.unsure = self.unsure or not isinstance(request, Fetch)
            raise
        if isinstance(reply, Generated):
            generated.extend(reply.tokens.tolist())
        if not isinstance(reply, Fetched):  # a Fetch moves nothing
            self._track(request, reply, generated)
        return reply

    def _track(self, request: Request, reply: Prefilled | Verified | Rewound | Generated, generated: list[int]) -> None:
        """Follow what the session holds: the tokens each request committed, cut to ``reply.committed``."""
        added: list[int] = []
        if isinstance(request, Prefill):
            added = request.tokens.tolist()
        elif isinstance(request, Verify) and isinstance(reply, Verified):
            nodes = request.tokens.tolist()
            added = [request.root_token, *(nodes[i - 1] for i in reply.accepted.tolist())]
        elif isinstance(request, Generate) and isinstance(reply, Generated):
            added = [request.root_token, *generated]
        held = (self.held + added)[: reply.committed]
        if isinstance(request, Rewind):
            held = self.held[: reply.committed]
        if len(held) < reply.committed:  # the session moved in a way this client cannot follow
            held, self.unsure = held + [-1] * (reply.committed - len(held)), True
        self.held, self.committed = held, reply.committed

    async def prefill(
        self,
        tokens: list[int],
        take: TakePrefilled | None = None,
        behind: asyncio.Future[Reply] | None = None,
        then: Request | None = None,
        later: TakeLater | None = None,
    ) -> Reply | None:
        """Append ``tokens`` in chunks, PREFILL_PIPELINE of them in flight (see the module docstring);
        each chunk and its reply go to ``take``, in order (awaited: a ``take`` that only queues the
        chunk for the draft, :mod:`app.engine.intake`, lets the reply of ``then`` through at once).
        ``behind``: a request sent just before (a Rewind), answered first: the chunks ride on its round
        trip. ``then``: a request sent right behind the last chunk, on the same round trip; returns its
        reply (None without one). ``later``, with ``then`` and a server that keeps vectors: the tokens
        go as one Prefill(later), their vectors to ``later`` after ``then``'s reply (:mod:`app.engine.later`)."""
        if later is not None and then is not None and tokens and self.keeps_vectors:
            return await prefill_later(self, tokens, later, behind, then, PREFILL_PIPELINE)
        in_flight: deque[tuple[list[int], asyncio.Future[Reply]]] = deque()
        last: asyncio.Future[Reply] | None = None
        try:
            done = self._send_chunks(tokens, 0, in_flight, behind is not None)
            if then is not None and done == len(tokens):
                last = self._send_behind(then, behind is not None or bool(in_flight))
            if behind is not None:
                await behind
            start = len(self.held)
            while in_flight:
                piece, task = in_flight.popleft()
                reply = await task
                assert isinstance(reply, Prefilled)
                self.prefill_sent += len(piece)
                self.size_chunks(reply, len(piece))
                done += self._send_chunks(tokens, done, in_flight)  # before the draft takes this one in
                if then is not None and last is None and done == len(tokens):
                    last = self._send_behind(then, bool(in_flight))
                if take is not None:
                    await take(start, piece, reply)
                start += len(piece)
            return None if last is None else await last
        finally:
            for _, task in in_flight:
                task.cancel()
            if last is not None:
                last.cancel()

    def size_chunks(self, reply: Prefilled | Fetched, tokens: int) -> None:
        """The next chunk's (or piece's) tokens, from a reply of ``tokens`` tokens: its bytes per token."""
        frame = PREFILL_FRAME_BYTES / PREFILL_PIPELINE
        self.prefill_chunk = max(1, int(frame // _bytes_per_token(reply, tokens)))

    def _send_behind(self, request: Request, pipelined: bool) -> asyncio.Future[Reply]:
        return asyncio.ensure_future(self.ask(request, pipelined=pipelined))

    def _send_chunks(
        self,
        tokens: list[int],
        done: int,
        in_flight: deque[tuple[list[int], asyncio.Future[Reply]]],
        behind: bool = False,
    ) -> int:
        """Send chunks of ``tokens[done:]`` (as even as ``prefill_chunk`` allows) until PREFILL_PIPELINE
        are in flight; returns the tokens sent. Each rides on the round trip of a chunk in flight
        before it (after a reply is taken, the next one is still in flight), the first on that of
        the request it was sent ``behind``, if any."""
        sent = 0
        while done + sent < len(tokens) and len(in_flight) < PREFILL_PIPELINE:
            left = len(tokens) - done - sent
            chunks = -(-left // self.prefill_chunk)  # still to send, at most prefill_chunk tokens each
            piece = tokens[done + sent : done + sent + -(-left // chunks)]  # even sizes: no runt at the end
            request = Prefill(0, torch.tensor(piece, dtype=torch.int64))
            pipelined = behind or bool(in_flight)
            in_flight.append((piece, asyncio.ensure_future(self.ask(request, pipelined=pipelined))))
            sent += len(piece)
        return sent

    async def hold(
        self, history: Sequence[int], take: TakePrefilled | None = None, keep_at_most: int | None = None
    ) -> int:
        """Make the session hold exactly ``history``; returns the tokens kept (the common prefix).

        At most ``keep_at_most`` tokens are kept (what the draft still has: the Prefilled vectors of
        the rest go to ``take``, so the draft observes them again).
        """
        keep, _ = await self._hold(history, take, keep_at_most)
        return keep

    async def _hold(
        self,
        history: Sequence[int],
        take: TakePrefilled | None,
        keep_at_most: int | None,
        then: Request | None = None,
        later: TakeLater | None = None,
    ) -> tuple[int, Reply | None]:
        keep = common_prefix(self.held, history)
        if keep_at_most is not None:
            keep = min(keep, keep_at_most)
        if self.unsure or len(self.held) != keep:
            return keep, await self._rewind_and_prefill(keep, list(history[keep:]), take, then, later)
        return keep, await self.prefill(list(history[keep:]), take, then=then, later=later)

    async def _rewind_and_prefill(
        self,
        keep: int,
        tokens: list[int],
        take: TakePrefilled | None,
        then: Request | None = None,
        later: TakeLater | None = None,
    ) -> Reply | None:
        """Rewind to ``keep``, with the Prefill of ``tokens`` (and ``then``) pipelined behind it: one round trip."""
        rewind = asyncio.ensure_future(self.ask(Rewind(0, keep)))
        try:
            reply = await self.prefill(tokens, take, behind=rewind, then=then, later=later)
            await rewind
        finally:
            rewind.cancel()
        self.unsure = False
        return reply

    async def start(
        self,
        history: Sequence[int],
        take: TakePrefilled | None = None,
        keep_at_most: int | None = None,
        then: Request | None = None,
        later: TakeLater | None = None,
    ) -> Reply | None:
        """A generation starts after ``history``: connect if need be (within connect_timeout_s), then hold it.

        ``then`` (the first Verify) goes right behind the prompt, on its round trip, when the link is
        up; returns its reply, or None when the start had to connect first (``then`` was not sent).
        ``later``: where the prompt's vectors go when they come after ``then``'s reply (see ``prefill``).
        """
        if not self.up:
            deadline = time.perf_counter() + self.config.link.connect_timeout_s
            await self.reconnect(list(history), take, keep_at_most, deadline)
            return None
        _, reply = await self._hold(history, take, keep_at_most, then, later)
        return reply

    def forget(self) -> None:
        """Keep nothing of what the session holds: the next hold() rewinds to 0."""
        self.held, self.unsure = [], True

    async def replay(self, history: Sequence[int], take: TakePrefilled | None = None) -> None:
        """The server lost the session's state (evicted): rebuild it from ``history``."""
        self.held = []
        await self._rewind_and_prefill(0, list(history), take)  # the Rewind revives an evicted session, empty

    # -- (re)connecting --------------------------------------------------------------------------
    async def reconnect(
        self,
        history: list[int],
        take: TakePrefilled | None = None,
        keep_at_most: int | None = None,
        deadline: float | None = None,
    ) -> tuple[bool, int]:
        """Connect with backoff until the session holds ``history``: (resumed, tokens prefilled again).

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
                return await self._attempt(history, take, keep_at_most)
            except LinkDownError as exc:
                if deadline is not None and time.perf_counter() + delay > deadline:
                    raise VerifierUnavailableError(
                        f"no verifier at {link.url} ({exc}); start moa-server there or check the URL"
                    ) from exc
            delay = min(max(2 * delay, link.backoff_initial_s), link.backoff_max_s)

    async def connect(self) -> None:
        """One attempt at a connection (the session resumed as held, or a new one); LinkDownError if none."""
        await self._attempt(list(self.held) if not self.unsure else [], None, None)

    async def _attempt(
        self, history: list[int], take: TakePrefilled | None, keep_at_most: int | None
    ) -> tuple[bool, int]:
        try:
            result = await self._connect(history, take, keep_at_most)
        except LinkDownError as exc:
            self.failed = str(exc) or "unreachable"
            raise
        self.failed = ""
        return result

    async def _connect(
        self, history: list[int], take: TakePrefilled | None, keep_at_most: int | None
    ) -> tuple[bool, int]:
        await self.drop()
        resume = self.session_id is not None
        kept = common_prefix(self.held, history) if resume and not self.unsure else 0
        hello = Hello(
            PROTOCOL_VERSION,
            self.config.client_name,
            self.draft.target.to_dict(),
            self.draft.draft_id,
            self.draft.needs(self.compressed),
            resume_session=self.session_id,
            resume_length=kept if resume else None,
        )
        try:
            self.link = await Link.open(self.config.link, hello, self.traffic)
        except VerifierRefusedError as exc:
            if exc.code is ErrorCode.DRAFT_UNSUPPORTED and self.compressed:
                self.compressed, self.session_id = False, None  # other needs: a new session, the raw KV
                return await self._connect(history, take, keep_at_most)
            raise
        welcome = self.link.welcome
        assert welcome is not None
        resumed = welcome.resumed and welcome.committed == kept
        self.session_id, self.committed = welcome.session_id, welcome.committed
        self.held = list(self.held[:kept]) if resumed else [-1] * welcome.committed
        self.unsure = not resumed and welcome.committed > 0
        before = self.prefill_sent
        await self.hold(history, take, keep_at_most)
        return resumed, self.prefill_sent - before

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


def _bytes_per_token(reply: Prefilled | Fetched, tokens: int) -> float:
    """The reply's activation bytes per prefilled token (what sizes the next chunk), at least 1."""
    nbytes = sum(t.numel() * t.element_size() for t in reply.activations.values())
    return max(1.0, nbytes / max(tokens, 1))
