"""The draft's intake of a prompt's Prefilled vectors, queued on its worker so the first token need not wait.

At a generation's start the prompt is prefilled and the first Verify rides right behind it
(:meth:`~app.engine.session.VerifierSession.prefill`); its reply, the first token, comes back on
the prompt's round trip. Taking the prompt's vectors into the draft costs the client's CPU as much
as several round trips (a MoA draft runs its layers over every prompt token), so the chunks are
*queued* on the draft's worker instead of waited for: the first token is shown while the draft is
still reading the prompt, and a speculative stream's Generate goes out meanwhile.

    take(start, tokens, reply)   a Prefilled chunk: queued at once on the draft's worker (FIFO, so
                                 the draft observes the chunks in order); returns without waiting
    after(fn, *args)             more work for the draft, queued behind the chunks (the first round)
    settle()                     every queued job done; the first failure raised
    later(vectors)               a prompt's vectors still to come (:mod:`app.engine.later`): one job
                                 that takes in each piece as it comes, so what is queued behind it
                                 waits for the whole prompt
    drop()                       a cancel: the jobs not begun are dropped, their failures unread

The rule, in one place: the draft's state is read on the event loop (``drafter.observed``: the next
chain's length, the offline writer, a reconnect's ``keep_at_most``) only once the intake has
settled; work submitted to the same worker later needs no wait (the worker runs jobs in order).
:class:`~app.engine.generation.Generation` holds the intake: its start settles it (a stream's start
leaves it to :meth:`~app.engine.generation.Generation.run` and the offline spell, which settle it
before they read), a failure of the start settles it before the error goes on, and a cancel drops
it (the draft keeps a prefix of the prompt, which the next start cuts back to anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from app.engine.later import Later
from drafts.protocol import Prefilled

Submit = Callable[..., "asyncio.Future[Any]"]  # fn(*args) on the draft's worker, submitted at once (FIFO)


class Intake:
    """See the module docstring. Lives on the event loop; the jobs run on the draft's worker."""

    def __init__(self, submit: Submit, take_in: Callable[[int, list[int], Prefilled], None]) -> None:
        self.submit = submit
        self.take_in = take_in  # on the worker: the draft takes in a chunk's vectors
        self.queued: list[asyncio.Future[Any]] = []
        self.laters: list[Later] = []  # vectors still to come, each held by a job in ``queued``

    async def take(self, start: int, tokens: list[int], reply: Prefilled) -> None:
        """A :data:`~app.engine.session.TakePrefilled`: the chunk is queued, not waited for."""
        self.after(self.take_in, start, tokens, reply)

    def later(self, vectors: Later) -> None:
        """Vectors still to come: the draft takes in each piece as it comes, before anything queued after."""
        self.laters.append(vectors)
        self.after(self._take_later, vectors)

    def _take_later(self, vectors: Later) -> None:
        """On the worker: each piece, in order, as it comes (the worker waits for them)."""
        for start, tokens, reply in vectors.pieces():
            self.take_in(start, tokens, reply)

    def after(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` on the draft's worker, behind what is queued; settled with it."""
        self.queued.append(self.submit(fn, *args))

    async def settle(self) -> None:
        """Every queued job done (the worker runs them in order); the first failure is raised."""
        queued, self.queued = self.queued, []
        laters = list(self.laters)  # until their jobs are done: a drop meanwhile lets their waits go
        outcomes = await asyncio.gather(*queued, return_exceptions=True)
        self.laters = [vectors for vectors in self.laters if vectors not in laters]
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def drop(self) -> None:
        """A cancel: the jobs not begun are dropped (the one running ends there), their failures unread."""
        queued, self.queued = self.queued, []
        laters, self.laters = self.laters, []
        for vectors in laters:
            vectors.cancel()  # the job waiting for its pieces ends after the one it holds
        for future in queued:
            future.cancel()
            future.add_done_callback(_unread)


def _unread(future: asyncio.Future[Any]) -> None:
    with contextlib.suppress(asyncio.CancelledError, Exception):
        future.exception()
