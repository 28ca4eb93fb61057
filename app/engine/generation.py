"""One generation over the network: start, then online rounds, offline spells and repairs until a stop.

    start     (here) keep what the last generation left in the verifier and the draft (the longest
              common prefix with this prompt: a chat's next turn), Prefill the rest of the prompt
              but its newest token, take the vectors into the draft; the newest token goes right
              behind them as a Verify of its own (no draft: the draft has not seen the prompt yet),
              so the first token comes back on the prompt's round trip, and is shown while the draft
              still takes in the prompt (queued on its worker: :mod:`app.engine.intake`). A
              verifier that cannot be reached starts the answer offline at once if something can
              write it, else the generation fails at once (VerifierUnavailableError), not after a
              connect timeout.
    online    :mod:`app.engine.online`: chains drafted ahead while the last one is verified, or
              EAGLE-2 trees, until a stop or a dead link
    offline   :mod:`app.engine.spell`: the link died: keep writing (:mod:`app.engine.offline`)
              while the session reconnects, up to ``offline_budget`` unverified tokens
    repair    :mod:`app.engine.repair`: verify the offline tokens, replace them from the first
              rejection by the target's; the offline tokens after the rejection go on as a lookup
              draft in the next online rounds (:mod:`app.engine.resync_round`)

Each phase reads top to bottom in its own function or class; this one holds what they share (the
transcript, the session, the draft, the pacer, the figures) and the few verbs they all use. The
draft runs on the draft's worker thread (``work``), the transcript's text on a text thread
(:class:`~app.engine.transcript.Scribe`); the event loop only moves bytes and decides.

At T = 0 every confirmed token is the target's argmax after the confirmed tokens before it, so
the output equals the target's own greedy output whatever the link does; confirmed tokens are
never taken back (only offline ones are replaced).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from concurrent.futures import Executor

from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.errors import LinkDownError, VerifierRefusedError, VerifierUnavailableError
from app.engine.events import EngineEvent, Finished, StatsUpdated
from app.engine.intake import Intake, Submit
from app.engine.link import Reply, Request
from app.engine.offline import DraftContinuation, OfflineContinuation
from app.engine.online import online
from app.engine.pacing import Pacer
from app.engine.progress import Progress
from app.engine.repair import repair
from app.engine.session import VerifierSession
from app.engine.spell import offline_spell
from app.engine.transcript import Scribe, Transcript
from drafts.decoding.config import DecodeConfig
from drafts.decoding.resync import OfflineTail
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import DraftShape
from drafts.errors import ErrorCode
from drafts.neural.chain import ChainPolicy, IncrementalChain, Proposal
from drafts.protocol import Prefilled, Verified, Verify
from drafts.protocol.vectors import from_wire
from drafts.sampling import SamplingConfig
from drafts.target.activations import Activations
from drafts.target.chat import common_prefix
from drafts.target.default_shape import is_verifier_default, verifier_shape
from drafts.tree import DraftTree


class Generation:
    """One prompt's generation; ``await run()`` returns its Finished event (also emitted)."""

    def __init__(
        self,
        prompt: list[int],
        decode: DecodeConfig,
        config: EngineConfig,
        draft: ClientDraft,
        session: VerifierSession,
        gguf: OfflineContinuation | None,
        work: Submit,
        text: Executor,
        emit: Callable[[EngineEvent], None],
    ) -> None:
        self.decode, self.config, self.session, self.work, self.emit = decode, config, session, work, emit
        self.drafter = draft.drafter  # its caches hold what the last generation left (cut back at the start)
        self.draft = draft
        self.scribe = Scribe(text, emit)
        self.transcript = Transcript.begin(prompt, decode, draft.stop_ids, draft.decode, self.scribe.buffer)
        self.generator = decode.sampling.generator()
        # at T > 0 each drafted token is sampled from, and sent with, its top-K proposal
        self.policy = ChainPolicy(decode.sampling, decode.shape.min_confidence, config.q_top_k)
        self.offline = gguf or DraftContinuation(self.drafter, work, self.policy, self.generator)
        self.pacer = Pacer(config.gamma_min, config.gamma_max, config.acceptance_prior)
        self.progress = Progress(self.transcript, session)
        self.held = False  # the verifier holds this prompt's history
        self.tail: OfflineTail | None = None  # offline tokens after a repair's rejection (app.engine.resync_round)
        self.drafted_shape = ""  # the shape online rounds drafted (StatsUpdated.shape)
        self.deferred: list[tuple[int, list[int], Prefilled]] = []  # replayed vectors, taken in after a spell
        self.intake = Intake(work, self._take_prefilled)  # the prompt's vectors, queued for the draft

    async def run(self) -> Finished:
        t = self.transcript
        await self.settled()  # a stream's start (StreamGeneration) may leave the intake running
        while t.stop is None:
            try:
                if not self.held:
                    await self.start()
                elif t.offline:
                    await repair(self)
                else:
                    t.offline_complete = False
                    await online(self)
            except LinkDownError as exc:
                if not await offline_spell(self, str(exc)):
                    break  # the verifier did not come back: the output ends unverified
        return self.finish()

    def finish(self, stop: StopReason | None = None) -> Finished:
        """The Finished event (emitted, after a last StatsUpdated); ``stop`` overrides (CANCELLED)."""
        self.scribe.settle()  # a cancelled round's text is in: the events and the answer agree
        self.intake.drop()  # a cancel during a stream's intake: nothing waits for the draft
        if stop is not None:
            self.transcript.stop = stop
        self.emit(self.stats())
        t = self.transcript
        finished = Finished(tuple(t.output), t.stop, self.progress.totals(self.pacer.rtt_s), t.answer)
        self.emit(finished)
        return finished

    def stats(self) -> StatsUpdated:
        return dataclasses.replace(self.progress.stats(self.pacer.rtt_s), shape=self.drafted_shape)

    # -- start -----------------------------------------------------------------------------------
    async def start(self, settle: bool = True) -> None:
        """The verifier and the draft keep their common prefix with the prompt and take in the rest; the
        first token is shown before the draft has taken in the prompt (:mod:`app.engine.intake`).
        ``settle`` False: the intake may still run when this returns (a stream's Generate goes out
        meanwhile); ``run()`` and the offline spell settle it before they read the draft's state."""
        history = self.transcript.history
        await self.work(self._cut_back, history)
        if not self.session.up:
            await self._connect()
        first = self._first_verify()
        started = time.perf_counter()
        try:
            reply = await self._hold_prompt(history, first)
            self.held = True
            if reply is not None:
                await self._first_round(reply, time.perf_counter() - started)
        except asyncio.CancelledError:
            self.intake.drop()
            raise
        except BaseException:
            await self.settled()  # whoever handles the error (an offline spell) reads the draft's state
            raise
        if settle:
            await self.settled()
        self.offline.follow(self.transcript.context)

    async def _hold_prompt(self, history: list[int], first: Verify | None) -> Reply | None:
        """The session holds ``history``, its Prefilled vectors queued for the draft; ``first``'s reply."""
        try:
            return await self.session.start(history, self.intake.take, self.drafter.observed, first, self.intake.later)
        except VerifierRefusedError as exc:
            if exc.code is not ErrorCode.SESSION_UNKNOWN:
                raise
            await self.session.replay(history, self.intake.take)
            return None

    async def settled(self) -> None:
        """The draft has taken in everything queued for it (its state may be read on the loop)."""
        await self.intake.settle()

    def _first_verify(self) -> Verify | None:
        """The root alone, to ride behind the prompt's Prefill: the first token comes with the prompt's
        round trip (none when the link is down, the answer has begun, or the context is full)."""
        t = self.transcript
        if not self.session.up or t.confirmed or t.offline or t.stop is not None:
            return None
        if len(t.context) >= self.session.capabilities.max_context:
            return None
        return Verify.of(0, t.root, DraftTree.chain([], None, None), self.sampling)

    async def _first_round(self, reply: Reply, seconds: float) -> None:
        """The target's token after the root, verified with the prompt: shown, and queued for the draft
        behind the prompt's vectors."""
        assert isinstance(reply, Verified)
        t, root = self.transcript, self.transcript.root
        self.progress.verified(0, 0, seconds)  # a target forward, though no round trip of its own
        await self.scribe.run(t.confirm_round, [], [], reply.next_token)
        self.intake.after(self.take_round, [root], reply)

    async def _connect(self) -> None:
        """One attempt at the verifier. Unreachable: the answer starts offline (LinkDownError) if
        something here can write it, else it fails at once (VerifierUnavailableError; the UI keeps
        the message): the draft cannot write before it has seen any target state."""
        can_write = self.drafter.observed > 0 or self.offline.name != "draft"
        try:
            if self.session.failed and can_write:  # the last attempt failed: no second wait, write at once
                raise LinkDownError(self.session.failed)
            await self.session.connect()
        except LinkDownError as exc:
            if can_write:
                raise
            raise VerifierUnavailableError(
                f"no verifier at {self.config.link.url} ({exc}), and nothing here can write an answer without "
                "one yet (the draft needs the target's state of a first exchange); start moa-server there, "
                "check the URL, or give an offline model (--offline-model)"
            ) from exc

    def _cut_back(self, history: list[int]) -> None:
        """On the worker: the draft keeps its common prefix with ``history`` (one that cannot cut back starts
        afresh); read there, behind anything still queued for the draft."""
        try:
            self.drafter.truncate(min(common_prefix(self.drafter.history, history), self.drafter.observed))
        except (NotImplementedError, AttributeError):
            self.drafter.begin([])

    # -- verbs the phases share ------------------------------------------------------------------
    async def ask(self, request: Request) -> Reply:
        """The reply to ``request``; a session whose state the server lost is replayed, then asked again."""
        while True:
            try:
                return await self.session.ask(request)
            except VerifierRefusedError as exc:
                if exc.code is not ErrorCode.SESSION_UNKNOWN:
                    raise
                await self.session.replay(self.transcript.history, self.take_prefilled)

    async def take_prefilled(self, start: int, tokens: list[int], reply: Prefilled) -> None:
        """Prefilled vectors for ``tokens`` at ``start``..: the draft takes in those it has not seen."""
        await self.work(self._take_prefilled, start, tokens, reply)

    def _take_prefilled(self, start: int, tokens: list[int], reply: Prefilled) -> None:
        skip = self.drafter.observed - start
        assert skip >= 0, "the draft lags the verifier: hold() keeps at most what the draft has"
        if skip < len(tokens):
            self.drafter.observe(tokens[skip:], self.acts(reply).select(slice(skip, None)))

    async def defer(self, start: int, tokens: list[int], reply: Prefilled) -> None:
        """During an offline spell the draft is busy writing: replayed vectors wait for its end."""
        self.deferred.append((start, tokens, reply))

    def take_round(self, committed: list[int], reply: Verified) -> None:
        """On the worker: the draft takes in a verified round (its vectors decoded there, off the loop)."""
        self.drafter.observe(committed, self.acts(reply))

    def start_chain(
        self, root: int, tokens: list[int] | None = None, q: list[Proposal] | None = None
    ) -> IncrementalChain:
        """On the worker: the draft's chain below ``root``, made of ``tokens`` chosen already (if any)."""
        return self.drafter.start_chain(root, self.policy, self.generator, tokens or [], q or [])

    def acts(self, reply: Reply) -> Activations:
        return from_wire(getattr(reply, "activations", {}), self.draft.dtype, self.draft.device)

    def gamma(self, peek: bool = False, drafted: int = 0) -> int | None:
        """The next chain's length, within the verifier's limits; None (and a stop) when the context is full."""
        t, caps = self.transcript, self.session.capabilities
        room = caps.max_context - len(t.context) - 1  # drafted tokens that fit, with the next root after them
        if room < 0:
            if not peek:
                t.stop = StopReason.CONTEXT
            return None
        if self.drafter.observed == 0:
            return 0  # no target state seen yet (a one-token prompt): verify the root alone
        cap = min(room, caps.max_tree_nodes, self.decode.max_new_tokens - len(t.confirmed) - 1)
        shape = self.shape
        if not shape.is_tree and shape.gamma:  # a chain asked for: the pacer goes no longer
            cap = min(cap, shape.gamma)
        return self.pacer.gamma(cap, drafted) if cap > 0 else 0

    @property
    def shape(self) -> DraftShape:
        """The shape asked (``DecodeConfig.shape``); the default, the tree for the verifier's device."""
        if is_verifier_default(self.decode.shape):
            return verifier_shape(self.session.capabilities.device_kind)
        return self.decode.shape

    def verified(self, proposed: int, reply: Verified, seconds: float) -> None:
        """A chain's reply: the pacer and the figures learn how it went."""
        accepted = reply.accepted.numel()
        server_s = (reply.timings.queue_ms + reply.timings.forward_ms) / 1e3
        self.pacer.record_round(proposed, accepted, seconds, server_s)
        self.progress.verified(proposed, accepted, seconds)

    @property
    def sampling(self) -> SamplingConfig:
        return self.decode.sampling
