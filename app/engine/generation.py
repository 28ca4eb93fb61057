"""One generation over the network: prefill -> rounds (drafting ahead) -> offline spells -> repair.

    start     keep what the last generation left in the verifier and the draft (the longest
              common prefix with this prompt: a chat's next turn), Prefill the rest of the
              prompt but its newest token, take the vectors into the draft. A verifier that
              cannot be reached starts the answer offline at once (if something can write).
    online    draft a chain of ``gamma`` tokens below the root, Verify it; while it is in flight
              keep drafting *ahead* from the draft's own tokens. On the reply, confirm the
              accepted tokens and the target's next token; if the whole chain was accepted and
              the draft's next token is the target's, the tokens drafted ahead are the next chain
              already: send them at once (then take in the vectors), else drop them.
              ``gamma`` follows the measured round trip (:mod:`app.engine.pacing`). With a tree
              shape (``DecodeConfig.shape``), each round drafts an EAGLE-2 dynamic tree instead
              and sends it whole (no drafting ahead).
    offline   the link died (a socket error at once; a silent link within the keepalive): show the
              chain that was in flight and keep generating (:mod:`app.engine.offline`), while the
              session reconnects with backoff (resume, or replay of the confirmed history), up
              to ``offline_budget`` unverified tokens (then OfflineBudgetReached, and a wait)
    repair    send the offline tokens as chains (Verify; the verifier rewinds on resume): keep
              them up to the first rejection, replace the rest by the target's token, go on

At T = 0 every confirmed token is the target's argmax after the confirmed tokens before it, so
the output equals the target's own greedy output whatever the link does; confirmed tokens are
never taken back (only offline ones are replaced).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable

from app.engine.chain import DraftChain, stacked
from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig
from app.engine.errors import LinkDownError, VerifierRefusedError
from app.engine.events import (
    EngineEvent,
    Finished,
    LinkLost,
    LinkRestored,
    OfflineBudgetReached,
    StatsUpdated,
)
from app.engine.link import Reply, Request
from app.engine.offline import OfflineContinuation, Work
from app.engine.pacing import Pacer
from app.engine.progress import Progress
from app.engine.session import VerifierSession
from app.engine.transcript import Transcript
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason
from drafts.errors import ErrorCode
from drafts.protocol import Prefilled, Verified, Verify
from drafts.protocol.vectors import from_wire
from drafts.sampling import SamplingConfig
from drafts.sparse_proposal import SparseProposal
from drafts.target.activations import Activations
from drafts.target.chat import common_prefix
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
        chain: DraftChain,
        offline: OfflineContinuation,
        work: Work,
        emit: Callable[[EngineEvent], None],
    ) -> None:
        self.transcript = Transcript.begin(prompt, decode, draft.stop_ids, draft.decode, emit)
        self.decode, self.config, self.draft = decode, config, draft
        self.session, self.chain, self.offline = session, chain, offline
        self.work, self.emit = work, emit
        self.pacer = Pacer(config.gamma_min, config.gamma_max, config.acceptance_prior)
        self.progress = Progress(self.transcript, session)
        self._held = False  # the verifier holds this prompt's history
        self._deferred: list[tuple[int, list[int], Prefilled]] = []  # replayed vectors, observed after a spell

    async def run(self) -> Finished:
        t = self.transcript
        while t.stop is None:
            try:
                if not self._held:
                    await self._start()
                elif t.offline:
                    await self._repair()
                else:
                    t.offline_complete = False
                    await self._online()
            except LinkDownError as exc:
                if not await self._offline_spell(str(exc)):
                    break  # the verifier did not come back: the output ends unverified
        return self.finish()

    def finish(self, stop: StopReason | None = None) -> Finished:
        """The Finished event (emitted, after a last StatsUpdated); ``stop`` overrides (CANCELLED)."""
        if stop is not None:
            self.transcript.stop = stop
        self.emit(self.stats())
        finished = self._finished()
        self.emit(finished)
        return finished

    def stats(self) -> StatsUpdated:
        return self.progress.stats(self.pacer.rtt_s)

    # -- start -----------------------------------------------------------------------------------
    async def _start(self) -> None:
        """The verifier and the draft keep their common prefix with the prompt and take in the rest."""
        history = self.transcript.history
        await self.work(self.chain.truncate, common_prefix(self.chain.history, history))
        if not self.session.up:
            try:  # one attempt (none if the last failed): an unreachable verifier starts the answer offline
                if self.session.failed:
                    raise LinkDownError(self.session.failed)
                await self.session.connect()
            except LinkDownError:
                if self.chain.observed or self.offline.name != "draft":
                    raise
        try:
            await self.session.start(history, self._observe, self.chain.observed)
        except VerifierRefusedError as exc:
            if exc.code is not ErrorCode.SESSION_UNKNOWN:
                raise
            await self.session.replay(history, self._observe)
        self._held = True
        self.offline.follow(self.transcript.context)

    async def _observe(self, start: int, tokens: list[int], reply: Prefilled) -> None:
        """Prefilled vectors for ``tokens`` at ``start``..: the draft takes in those it has not seen."""
        await self.work(self._observe_now, start, tokens, reply)

    def _observe_now(self, start: int, tokens: list[int], reply: Prefilled) -> None:
        skip = self.chain.observed - start
        assert skip >= 0, "the draft lags the verifier: hold() keeps at most what the draft has"
        if skip < len(tokens):
            self.chain.observe(tokens[skip:], self._acts(reply).select(slice(skip, None)))

    async def _defer(self, start: int, tokens: list[int], reply: Prefilled) -> None:
        """During an offline spell the draft is busy writing: replayed vectors wait for its end."""
        self._deferred.append((start, tokens, reply))

    # -- online rounds ---------------------------------------------------------------------------
    async def _online(self) -> None:
        t = self.transcript
        gamma = self._gamma()
        if gamma is None:
            return
        if self.decode.shape.is_tree and gamma > 0:
            caps = self.session.capabilities
            await self._tree_round(min(caps.max_context - len(t.context) - 1, caps.max_tree_nodes))
            return
        root = t.root
        await self.work(self.chain.restart, root)
        await self._grow(gamma)
        proposal, q = self.chain.tokens[:gamma], self.chain.proposal_q(gamma)
        adopt: Callable[[], None] | None = None
        while True:
            reply = await self._verify(root, proposal, q, adopt)
            accepted = reply.accepted.numel()
            ahead, ahead_q = self._ahead(proposal, reply)
            adoption = _adoption(self.chain, [root, *proposal[:accepted]], functools.partial(self._acts, reply))
            t.confirm_round(proposal[:accepted], proposal[accepted:], reply.next_token)
            if t.stop is not None:  # the draft takes in what the verifier holds: the next turn starts from it
                await self.work(self._take_round, [root, *proposal[:accepted]], reply)
                return
            self.offline.follow(t.context)
            root = reply.next_token
            gamma = self._gamma(drafted=len(ahead))
            if gamma is None:
                return
            if ahead and len(ahead) >= gamma:  # drafted already: send it first, take in the vectors after
                adopt = functools.partial(adoption, root, ahead, ahead_q)
                proposal, q = ahead[:gamma], stacked(ahead_q[:gamma])
                t.counts.drafted_ahead += 1
                continue
            adopt = None
            await self.work(adoption, root, ahead, ahead_q)
            await self._grow(gamma - len(self.chain.tokens))
            proposal, q = self.chain.tokens[:gamma], self.chain.proposal_q(gamma)

    async def _tree_round(self, room: int) -> None:
        """One round with an EAGLE-2 tree of at most ``room`` nodes: draft, Verify, confirm the path."""
        t, root = self.transcript, self.transcript.root
        shape = self.decode.shape
        shape = dataclasses.replace(shape, tree_total=max(1, min(shape.tree_total, room)))
        started = time.perf_counter()
        tree = await self.work(self.chain.tree, root, shape)
        self.progress.drafted(time.perf_counter() - started)
        sent = time.perf_counter()
        reply = await self._ask(Verify.of(0, root, tree, self._sampling))
        assert isinstance(reply, Verified)
        path = [tree.tokens[i - 1] for i in reply.accepted.tolist()]
        self.pacer.record_round(len(path) + 1, len(path), time.perf_counter() - sent, _server_s(reply))
        self.progress.verified(max(tree.depths), len(path), time.perf_counter() - sent)
        t.confirm_round(path, [], reply.next_token)
        await self.work(self._take_round, [root, *path], reply)
        if t.stop is None:
            self.offline.follow(t.context)

    async def _verify(
        self, root: int, proposal: list[int], q: SparseProposal | None, adopt: Callable[[], None] | None
    ) -> Verified:
        """Verify ``proposal`` below ``root``; meanwhile take in the last round's vectors and draft ahead.

        At T > 0 ``q`` is each token's top-K proposal (~192 bytes a token at K = 32, on every link:
        no frame that could hold the keepalive's pong on 3g); None sends the tokens as deterministic
        proposals (T = 0, ``q_top_k = 0``, offline tokens), lossless too (:mod:`drafts.acceptance`).
        """
        request = Verify.of(0, root, DraftTree.chain(proposal, None, q), self._sampling)
        sent = time.perf_counter()
        reply_task = asyncio.create_task(self._ask(request))
        try:
            if adopt is not None:
                await self.work(adopt)
            await self._draft_ahead(reply_task, len(proposal))
            reply = await reply_task
        finally:
            reply_task.cancel()
        assert isinstance(reply, Verified)
        accepted = reply.accepted.numel()
        self.pacer.record_round(len(proposal), accepted, time.perf_counter() - sent, _server_s(reply))
        self.progress.verified(len(proposal), accepted, time.perf_counter() - sent)
        return reply

    def _ahead(self, proposal: list[int], reply: Verified) -> tuple[list[int], list[SparseProposal | None]]:
        """The tokens drafted past ``proposal`` (and their q), if they continue what the target confirmed."""
        drafted, n = self.chain.tokens, len(proposal)
        if reply.accepted.numel() == n and len(drafted) > n and drafted[n] == reply.next_token:
            return drafted[n + 1 :], self.chain.q[n + 1 :]
        return [], []

    async def _draft_ahead(self, reply: asyncio.Task[Reply], sent: int) -> None:
        """Draft past the chain in flight until the reply comes (or enough for the next chain is ready)."""
        budget = sent + 1 + (self._gamma(peek=True) or 0)
        while not reply.done() and len(self.chain.tokens) < budget and self.chain.observed and not self.chain.stalled:
            await self._grow(1)

    async def _grow(self, n: int) -> None:
        if n <= 0:
            return
        started = time.perf_counter()
        await self.work(self.chain.grow, n)
        self.pacer.record_steps(n, time.perf_counter() - started)
        self.progress.drafted(time.perf_counter() - started)

    def _gamma(self, peek: bool = False, drafted: int = 0) -> int | None:
        """The next chain's length, within the verifier's limits; None (and a stop) when the context is full."""
        t, caps = self.transcript, self.session.capabilities
        room = caps.max_context - len(t.context) - 1  # drafted tokens that fit, with the next root after them
        if room < 0:
            if not peek:
                t.stop = StopReason.CONTEXT
            return None
        if self.chain.observed == 0:
            return 0  # no target state seen yet (a one-token prompt): verify the root alone
        cap = min(room, caps.max_tree_nodes, self.decode.max_new_tokens - len(t.confirmed) - 1)
        return self.pacer.gamma(cap, drafted) if cap > 0 else 0

    # -- offline ---------------------------------------------------------------------------------
    async def _offline_spell(self, reason: str) -> bool:
        """Generate offline until the session is back; False if it never came back (the output ends unverified)."""
        t = self.transcript
        lost_at = time.perf_counter()
        self.emit(LinkLost(reason, self.offline.name))
        reconnect = asyncio.create_task(self.session.reconnect(t.history, self._defer, self.chain.observed))
        try:
            t.add_offline(await self.offline.begin(t.context + t.offline))
            while not reconnect.done():
                if t.offline_complete:
                    await asyncio.wait({reconnect}, timeout=self.config.offline_wait_s)
                    if not reconnect.done():
                        return False
                    break
                if len(t.offline) >= self.config.offline_budget:
                    self.emit(OfflineBudgetReached(self.config.offline_budget))
                    await asyncio.wait({reconnect})  # writing pauses until the verifier is back
                    break
                token = await self.offline.next_token(t.context + t.offline, self._sampling)
                if token is None:
                    t.offline_complete = True
                else:
                    t.add_offline([token])
            resumed, replayed = await reconnect
        finally:
            if not reconnect.done():  # given up on, or this generation was cancelled
                reconnect.cancel()
                with contextlib.suppress(asyncio.CancelledError, LinkDownError):
                    await reconnect
        for deferred in self._deferred:
            await self._observe(*deferred)
        self._deferred.clear()
        self._held = True
        self.emit(LinkRestored(resumed, time.perf_counter() - lost_at, replayed))
        return True

    async def _repair(self) -> None:
        """Verify the offline tokens (one chain of up to max_tree_nodes); replace them from the first rejection."""
        t, caps = self.transcript, self.session.capabilities
        offline, root = list(t.offline), t.root
        piece = offline[: max(1, min(caps.max_tree_nodes, caps.max_context - len(t.context) - 1))]
        # q = None: each offline token is a deterministic proposal, lossless at any temperature
        reply = await self._ask(Verify.of(0, root, DraftTree.chain(piece), self._sampling))
        assert isinstance(reply, Verified)
        accepted, token = len(reply.acceptance.path), reply.next_token
        await self.work(self._take_round, [root, *piece[:accepted]], reply)
        self.progress.verified(len(piece), accepted, 0.0)
        sources = [TokenSource.DRAFT_ACCEPTED] * accepted + [TokenSource.TARGET]
        if accepted == len(piece) < len(offline) and token == offline[accepted]:
            t.repair(accepted + 1, piece + [token], sources, kept=accepted + 1)  # the span goes on: next piece
        else:
            t.repair(len(offline), piece[:accepted] + [token], sources, kept=accepted)
        self.offline.follow(t.context)

    # -- shared ----------------------------------------------------------------------------------
    async def _ask(self, request: Request) -> Reply:
        """The reply to ``request``; a session whose state the server lost is replayed, then asked again."""
        while True:
            try:
                return await self.session.ask(request)
            except VerifierRefusedError as exc:
                if exc.code is not ErrorCode.SESSION_UNKNOWN:
                    raise
                await self.session.replay(self.transcript.history, self._observe)

    def _acts(self, reply: Reply) -> Activations:
        return from_wire(getattr(reply, "activations", {}), self.draft.dtype, self.draft.device)

    def _take_round(self, committed: list[int], reply: Verified) -> None:
        """On the worker: the draft takes in a verified round (its vectors decoded there, off the loop)."""
        self.chain.observe(committed, self._acts(reply))

    @property
    def _sampling(self) -> SamplingConfig:
        return self.decode.sampling

    def _finished(self) -> Finished:
        t = self.transcript
        stats = self.progress.totals(self.pacer.rtt_s)
        return Finished(tuple(t.output), t.stop, stats, t.answer)


def _adoption(chain: DraftChain, committed: list[int], acts: Callable[[], Activations]) -> Callable[..., None]:
    """``adopt(root, ahead, ahead_q)``: the draft takes in a round's vectors, then continues below
    ``root`` from the tokens it drafted ahead (none: a fresh chain). Runs on the worker."""

    def adopt(root: int, ahead: list[int], ahead_q: list[SparseProposal | None]) -> None:
        chain.observe(committed, acts())
        chain.adopt(root, ahead, ahead_q)

    return adopt


def _server_s(reply: Verified) -> float:
    return (reply.timings.queue_ms + reply.timings.forward_ms) / 1e3
