"""An offline spell: the link died, the answer goes on unverified until the verifier is back.

Top to bottom (:func:`offline_spell`): tell the UI (LinkLost), start reconnecting in the
background (resume the session, or replay the confirmed history, with backoff), show at once what
the offline writer holds already (the draft: the chain that was in flight and the tokens drafted
ahead), then write a token at a time (:mod:`app.engine.offline`) until the session is back. An
answer begun offline is never ended before its first token (no stop token is written first).
Writing stops early at a stop (then the spell waits ``offline_wait_s`` for the verifier, else the answer
ends unverified) or at ``offline_budget`` unverified tokens (OfflineBudgetReached, then it waits
for the verifier as long as it takes: a long outage must not write pages that the repair then
deletes). The vectors replayed meanwhile are taken in by the draft after the spell (it was busy
writing), and the offline tokens are then repaired (:mod:`app.engine.repair`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from app.engine.errors import LinkDownError
from app.engine.events import LinkLost, LinkRestored, OfflineBudgetReached

if TYPE_CHECKING:
    from app.engine.generation import Generation


async def offline_spell(g: Generation, reason: str) -> bool:
    """Write offline until the session is back; False if it never came back (the output ends unverified)."""
    t, config = g.transcript, g.config
    lost_at = time.perf_counter()
    g.emit(LinkLost(reason, g.offline.name))
    await g.settled()  # a stream's start may leave the prompt's intake running: the draft's state is read next
    reconnect = asyncio.create_task(g.session.reconnect(t.history, g.defer, g.drafter.observed))
    try:
        held = await g.offline.begin(t.context + t.offline)
        if held:
            await g.scribe.run(t.add_offline, held)
        while not reconnect.done():
            if t.offline_complete:
                await asyncio.wait({reconnect}, timeout=config.offline_wait_s)
                if not reconnect.done():
                    return False
                break
            if len(t.offline) >= config.offline_budget:
                g.emit(OfflineBudgetReached(config.offline_budget))
                await asyncio.wait({reconnect})  # writing pauses until the verifier is back
                break
            token = await g.offline.next_token(t.context + t.offline, g.sampling, first_token_bans(g))
            if token is None:
                t.offline_complete = True
            else:
                await g.scribe.run(t.add_offline, [token])
        resumed, replayed = await reconnect
    finally:
        if not reconnect.done():  # given up on, or this generation was cancelled
            reconnect.cancel()
            with contextlib.suppress(asyncio.CancelledError, LinkDownError):
                await reconnect
    for deferred in g.deferred:
        await g.take_prefilled(*deferred)
    g.deferred.clear()
    g.held = True
    g.emit(LinkRestored(resumed, time.perf_counter() - lost_at, replayed))
    return True


def first_token_bans(g: Generation) -> frozenset[int]:
    """The stops, while the answer is empty: an answer begun offline never ends before its first token
    (a draft that has not seen the target's state of a new message often guesses an end at once, and an
    empty bubble helps no one; the repair verifies what it writes instead, and keeps the target's own
    end if that was right)."""
    return g.draft.stop_ids if not g.transcript.output else frozenset()
