"""A prompt's vectors after its first token: ``Prefill(later=True)``, then Fetch (protocol 7).

A MoA draft reads ~1.2 KB of vectors a prompt token, so a prompt prefilled with its vectors goes
up in chunks (the bytes in flight stay under ``PREFILL_FRAME_BYTES``, for the keepalive), each a
server forward of its own, and the first token waits for them all. With a server that keeps them
(``Capabilities.later``) the generation's start sends the prompt as one ``Prefill(later=True)``
with the first Verify right behind it: one forward, a small reply, then the first token. Only
then are the vectors fetched, in pieces sized as the chunks were and as many in flight, so they
never go ahead of the first token on the link and never queue more than the chunks did ahead of
the keepalive's pong. The server answers a Fetch beside its queue (a running Generate's steps
and the Fetches' rows share its worker), and for a MoA draft computes the memory vectors only
then, so even the compressor's pass over the prompt comes after the first token.

    Later            the hand-off: the session's fetch task puts each piece (on the loop), the
                     draft's worker takes them in order (blocking there, so whatever is queued
                     for the draft after it, the first round's vectors, a stream's parts, waits
                     behind the prompt's, as the draft must observe them in order)
    prefill_later    a generation's start: the prompt as one Prefill(later), the first request right
                     behind it, the fetch task started behind that request's reply
    fetch(...)       the fetch task: behind the first token's reply, the pieces, PIPELINE in flight

A piece that cannot come (the link dropped, the server refused) ends the hand-off early: the draft
holds a prefix of the prompt, which a reconnect's ``keep_at_most`` (the draft's observed length)
and the next start's cut-back already expect.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING

import torch

from app.engine.errors import LinkDownError, VerifierRefusedError
from drafts.protocol import Fetch, Fetched, Prefill, Prefilled

if TYPE_CHECKING:
    from app.engine.link import Reply, Request
    from app.engine.session import VerifierSession

PIECE_WAIT_S = 600.0  # the most the draft's worker waits for one piece: a bound, never reached when the loop is alive
Piece = tuple[int, list[int], Prefilled]  # (session index of the first token, the tokens, their rows)
Ask = Callable[[Fetch, bool], Awaitable[Fetched]]  # (request, pipelined) -> its reply


class Later:
    """The vectors of ``tokens`` (from session index ``start``), as they come; see the module docstring."""

    def __init__(self, start: int, tokens: list[int]) -> None:
        self.start, self.tokens = start, tokens
        self.task: asyncio.Future[None] | None = None  # the fetch task, once started
        self.reason = ""  # why the pieces ended early ("" while they come, or when all came)
        self._pieces: queue.SimpleQueue[Piece | None] = queue.SimpleQueue()
        self._ended = False

    @property
    def end(self) -> int:
        return self.start + len(self.tokens)

    def put(self, start: int, length: int, reply: Fetched) -> None:
        """On the loop: the piece of ``length`` tokens from ``start`` came; the draft gets it as a Prefilled."""
        tokens = self.tokens[start - self.start : start - self.start + length]
        self._pieces.put((start, tokens, Prefilled(reply.request_id, start + length, reply.activations)))

    def close(self, reason: str = "") -> None:
        """On the loop: no more pieces (``reason``: why they ended early)."""
        if not self._ended:
            self._ended, self.reason = True, reason
            self._pieces.put(None)

    def cancel(self) -> None:
        """A cancel: the fetch task stops and the draft's worker is let go after the piece it holds."""
        if self.task is not None:
            self.task.cancel()
        self.close("cancelled")

    def pieces(self) -> Iterator[Piece]:
        """On the draft's worker: each piece, in order, as it comes (blocking), until the last or the end."""
        while True:
            try:
                piece = self._pieces.get(timeout=PIECE_WAIT_S)
            except queue.Empty:
                return
            if piece is None:
                return
            yield piece


async def fetch(later: Later, ask: Ask, first: Awaitable[object], piece: Callable[[], int], pipeline: int) -> None:
    """The kept rows of ``later``'s tokens, fetched once ``first`` (the first token's reply) is in, ``pipeline``
    pieces in flight, each of ``piece()`` tokens (read as each goes out: the replies teach it); into ``later``."""
    in_flight: deque[tuple[int, int, asyncio.Future[Fetched]]] = deque()
    try:
        with contextlib.suppress(Exception):
            await first  # its outcome is the generation's to read; the rows go out behind it either way
        sent = later.start
        while sent < later.end or in_flight:
            while sent < later.end and len(in_flight) < pipeline:
                n = min(piece(), later.end - sent)
                in_flight.append((sent, n, asyncio.ensure_future(ask(Fetch(0, sent, n), bool(in_flight)))))
                sent += n
            start, n, task = in_flight.popleft()
            later.put(start, n, await task)
        later.close()
    except (LinkDownError, VerifierRefusedError) as exc:
        later.close(str(exc))
    finally:
        for _, _, task in in_flight:
            task.cancel()
        later.close("cancelled")


async def prefill_later(
    session: VerifierSession,
    tokens: list[int],
    take: Callable[[Later], None],
    behind: asyncio.Future[Reply] | None,
    then: Request,
    pipeline: int,
) -> Reply:
    """``tokens`` in one Prefill(later) (behind ``behind``, a Rewind, when given), ``then`` right behind it;
    their vectors handed to ``take`` as a :class:`Later` fetched behind ``then``'s reply (``pipeline`` pieces in
    flight), which is returned."""
    request = Prefill(0, torch.tensor(tokens, dtype=torch.int64), later=True)
    prefill = asyncio.ensure_future(session.ask(request, pipelined=behind is not None))
    first = asyncio.ensure_future(session.ask(then, pipelined=True))
    try:
        if behind is not None:
            await behind
        reply = await prefill
        assert isinstance(reply, Prefilled)
        session.prefill_sent += len(tokens)
        vectors = Later(reply.committed - len(tokens), tokens)

        async def piece_of(request: Fetch, pipelined: bool) -> Fetched:  # its bytes per token size the next
            fetched = await session.ask(request, pipelined=pipelined)
            assert isinstance(fetched, Fetched)
            session.size_chunks(fetched, request.length)
            return fetched

        vectors.task = asyncio.ensure_future(fetch(vectors, piece_of, first, lambda: session.prefill_chunk, pipeline))
        take(vectors)  # queued for the draft before anything the caller queues after the first token
        return await first
    finally:
        prefill.cancel()
        first.cancel()
