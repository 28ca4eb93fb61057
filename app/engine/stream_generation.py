"""One message as a speculative stream: the server decodes without waiting, the draft's proposals ride along.

Round-based speculation (Verify, wait for the reply, Verify again) leaves the verifier idle for a
round trip per round, so on a long link it cannot match API streaming. In a speculative stream the
server decodes as for API streaming (Generate) and, before each step, verifies the part of the
client's newest proposal that still applies in the same forward pass: every step yields at least
the target's own token, a step with a usable proposal more.

    start     as the round-based generation (:meth:`Generation.start`): the common prefix kept, the
              rest of the prompt prefilled with the draft taking in its vectors, the first token
              on the prompt's round trip
    stream    Generate(propose=True) after the newest token; each Generated part (one server
              step) is shown, its first ``drafted`` tokens DRAFT_ACCEPTED, the rest TARGET, and its
              vectors go to the draft, which proposes below the part's newest token
              (:mod:`app.engine.proposer`, on the draft's worker)
    stop      a stop string ends the output here (the server knows only stop tokens and the
              length): the rest of the Generate is cancelled; a cancel() stops it as ApiGeneration's
    fallback  a server without ``Capabilities.propose``: the round-based generation answers
    drop      a dead link mid-stream: the round-based generation takes the rest of the message from
              what was shown (an offline spell, a repair, then rounds); nothing shown is lost

At T = 0 every token is the target's greedy choice whatever the proposals were (the server's
rule), so the output equals plain decoding's and API streaming's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import torch

from app.engine.errors import LinkDownError, VerifierRefusedError
from app.engine.events import Finished, StatsUpdated
from app.engine.generation import Generation
from app.engine.proposer import Proposer
from app.engine.spell import offline_spell
from drafts.decoding.stopping import StopReason
from drafts.errors import ErrorCode
from drafts.protocol import Generate, Generated


class StreamGeneration:
    """See the module docstring; ``await run()`` returns the Finished event (also emitted)."""

    def __init__(self, g: Generation) -> None:
        self.g = g  # the round-based generation: its start, its fallback, its transcript and figures
        self.proposer: Proposer | None = None
        self.step_at = 0.0  # when the last part came
        self.stopping: asyncio.Task[None] | None = None  # the Cancel sent after a stop string

    async def run(self) -> Finished:
        g = self.g
        try:
            if not g.held:
                await g.start(settle=False)  # the Generate goes out while the draft takes in the prompt
            if self._can_stream():
                await self._stream()
        except LinkDownError as exc:  # the round-based generation takes the rest: offline, then repair
            if not await offline_spell(g, str(exc)):
                return g.finish()
        except VerifierRefusedError as exc:
            if exc.code is not ErrorCode.SESSION_UNKNOWN:
                raise
            g.held = False  # the server lost the session: the round-based start replays the history
        return await g.run()  # at once g.finish() when the stream reached a stop

    def finish(self, stop: StopReason | None = None) -> Finished:
        if self.proposer is not None:
            self.proposer.stop()
        return self.g.finish(stop)

    def stats(self) -> StatsUpdated:
        return self.g.stats()

    def _can_stream(self) -> bool:
        g, t = self.g, self.g.transcript
        if t.stop is not None or t.offline or not g.session.up:
            return False
        return bool(getattr(g.session.capabilities, "propose", False))

    async def _stream(self) -> None:
        g, t = self.g, self.g.transcript
        caps = g.session.capabilities
        left = g.decode.max_new_tokens - len(t.confirmed)
        if left <= 0 or len(t.context) >= caps.max_context:
            t.stop = StopReason.MAX_TOKENS if left <= 0 else StopReason.CONTEXT
            return
        width = 1 if g.shape.is_tree else g.config.stream_width
        g.drafted_shape = f"stream {g.shape.describe()}" + (f" x{width}" if width > 1 else "")  # x4: a fan of 4
        proposer = self.proposer = Proposer(g, len(t.context) - 1, t.root)
        g.progress.proposals = proposer.tally
        stops = torch.tensor(sorted(g.draft.stop_ids), dtype=torch.int64)
        request = Generate(0, t.root, left, stops, g.sampling, propose=True)
        self.step_at = time.perf_counter()
        try:
            reply = await g.session.ask(request, self._take, on_id=proposer.started)
            assert isinstance(reply, Generated)
            self._take(reply)
        except asyncio.CancelledError:  # cancel(): nothing waits for the draft
            proposer.stop()
            raise
        except Exception:  # a dead link: the round-based generation goes on from here
            await self._settle(proposer)
            raise
        await self._settle(proposer)
        if t.stop is None and len(t.context) >= caps.max_context:
            t.stop = StopReason.CONTEXT

    async def _settle(self, proposer: Proposer) -> None:
        """Every part shown, and the draft holding every vector the server sent."""
        await proposer.settle()
        await self.g.scribe.drain()

    def _take(self, part: Generated) -> None:
        """A part arrived (on the loop): shown from the text thread, its vectors to the draft."""
        tokens = part.tokens.tolist()
        if not tokens:
            return  # a done part with nothing new (a cancel's)
        now, seconds = time.perf_counter(), time.perf_counter() - self.step_at
        self.g.progress.verified(0, part.drafted, seconds)  # one server step
        self.step_at = now
        loop = asyncio.get_running_loop()
        job = self.g.scribe.post(self._show, tokens, part.drafted)
        job.add_done_callback(lambda _: _call_soon(loop, self._shown))
        assert self.proposer is not None
        self.proposer.took(part, seconds)

    def _show(self, tokens: list[int], drafted: int) -> None:
        """On the text thread: the part's tokens, unless a stop ended the output already."""
        if self.g.transcript.stop is None:
            self.g.transcript.confirm_part(tokens, drafted)

    def _shown(self) -> None:
        """On the loop, after a part was shown: a stop string cancels the rest of the Generate."""
        g, t = self.g, self.g.transcript
        if t.stop is None:
            g.offline.follow(t.context)  # a local offline model keeps up (a no-op for the draft)
            return
        if t.stop is StopReason.STOP_STRING and self.stopping is None and g.session.link is not None:
            if self.proposer is not None:
                self.proposer.live = False  # the draft in hand ends, no newer one starts
            self.stopping = asyncio.ensure_future(self._cancel_rest())

    async def _cancel_rest(self) -> None:
        link = self.g.session.link
        if link is not None:
            with contextlib.suppress(LinkDownError, OSError, RuntimeError):
                await link.cancel()


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    """From the text thread: ``callback`` on the loop, unless the loop was closed meanwhile (the engine stopped)."""
    with contextlib.suppress(RuntimeError):  # "Event loop is closed"
        loop.call_soon_threadsafe(callback)
