"""Online rounds: chains verified one after another, each drafted while the one before was in flight.

A round, top to bottom (:meth:`ChainRounds.run`):

    1. send the chain's first ``gamma`` tokens below ``root`` (Verify; at T > 0 with each token's
       top-K proposal, ~192 bytes a token at K = 32: no frame that could hold the keepalive's pong
       on 3g; :mod:`drafts.sparse_proposal`)
    2. while it is in flight: the draft first takes in the last round's vectors if it has not yet
       (step 5's shortcut), then drafts *ahead*, past the chain sent, from its own tokens
    3. on the reply: confirm the accepted tokens and the target's token after them (the new root)
    4. the tokens drafted ahead continue what the target confirmed only if the whole chain was
       accepted and the draft's token after it is the target's: keep them, else drop them
    5. enough kept for the next chain: send them at once (back to 1; the draft takes in this
       round's vectors during that flight). Else take in the vectors, start a chain below the new
       root from the tokens kept, grow it to ``gamma`` (back to 1)

``gamma`` follows the measured round trip and acceptance (:mod:`app.engine.pacing`), at most the
chain length asked (``DecodeConfig.shape.gamma``). The rounds
end at a stop or a full context, or with LinkDownError (the generation then starts an offline
spell). Every drafting step is the core's (:class:`~drafts.neural.chain.IncrementalChain`, as
``moa-bench`` drafts), run on the draft's worker thread.

After a repair that rejected, a round whose root the offline tokens left hold is a re-sync round
instead (:mod:`app.engine.resync_round`); the chain rounds end before such a root.

With a tree shape (``DecodeConfig.shape``, or by default the tree for the verifier's device:
:func:`drafts.target.default_shape.verifier_shape`) each round drafts an EAGLE-2 dynamic tree instead and
sends it whole (:func:`tree_round`). At T > 0 a tree goes up *without* q, and that is the exact
rule for it: its candidates are the draft's top-k, chosen, not sampled, so each is a
deterministic proposal (q = δ_x), which the verifier's multi-candidate rule accepts losslessly at
any temperature (:mod:`drafts.acceptance`; chi-square: ``tests/drafts/test_acceptance.py``). A q
would be wrong there: ``min(1, p(x)/q(x))`` is exact only for a token drawn from q.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING, NamedTuple

from app.engine.resync_round import due, passed, resync_round
from drafts.neural.chain import IncrementalChain, Proposal, stacked
from drafts.protocol import Verified, Verify
from drafts.sparse_proposal import SparseProposal
from drafts.tree import DraftTree

if TYPE_CHECKING:
    from app.engine.generation import Generation
    from app.engine.link import Reply


async def online(g: Generation) -> None:
    """Rounds until a stop, a full context or a dead link: chains, or one tree round at a time."""
    if due(g):
        await resync_round(g)
        return
    gamma = g.gamma()
    if gamma is None:
        return
    shape = g.shape
    longest = min(shape.gamma, g.pacer.gamma_max) if shape.gamma else g.pacer.gamma_max
    g.drafted_shape = shape.describe() if shape.is_tree else f"paced chain <= {longest}"
    if shape.is_tree and gamma > 0:
        await tree_round(g)
    else:
        await ChainRounds(g).run(gamma)


class CatchUp(NamedTuple):
    """A verified round the draft has not taken in yet, and the tokens it drafted ahead past it."""

    committed: list[int]  # the round's root and accepted tokens
    reply: Verified  # their vectors
    root: int  # the target's token after them
    ahead: list[int]  # drafted past the chain, continuing what the target confirmed
    ahead_q: list[Proposal]


class ChainRounds:
    """Chains drafted ahead; see the module docstring."""

    def __init__(self, g: Generation) -> None:
        self.g = g
        self.chain: IncrementalChain | None = None  # the draft's chain below the root in flight

    async def run(self, gamma: int) -> None:
        g, t = self.g, self.g.transcript
        root = t.root
        await self.catch_up(root)
        await self.grow(gamma)
        sent, q = self.drafted(gamma)
        late: CatchUp | None = None
        while True:
            reply = await self.verify(root, sent, q, late)  # 1, 2
            accepted = sent[: reply.accepted.numel()]
            ahead, ahead_q = self.ahead(sent, reply)  # 4
            committed, root = [root, *accepted], reply.next_token
            await g.scribe.run(t.confirm_round, accepted, sent[len(accepted) :], root)  # 3
            gamma_next = g.gamma(drafted=len(ahead)) if t.stop is None else None
            passed(g)
            if gamma_next is None or due(g):  # a stop, a full context or a re-sync round next: the draft
                await g.work(g.take_round, committed, reply)  # takes in what the verifier holds
                return
            g.offline.follow(t.context)
            if ahead and len(ahead) >= gamma_next:  # 5: drafted already, sent at once
                late = CatchUp(committed, reply, root, ahead, ahead_q)
                sent, q = ahead[:gamma_next], stacked(ahead_q[:gamma_next])
                t.counts.drafted_ahead += 1
                continue
            late = None
            await self.catch_up(root, CatchUp(committed, reply, root, ahead, ahead_q))
            await self.grow(gamma_next - len(ahead))
            sent, q = self.drafted(gamma_next)

    async def verify(self, root: int, sent: list[int], q: SparseProposal | None, late: CatchUp | None) -> Verified:
        """Verify ``sent`` below ``root``; meanwhile catch up with ``late`` and draft ahead.

        ``q`` None sends the tokens as deterministic proposals (T = 0, ``q_top_k = 0``): lossless
        too (:mod:`drafts.acceptance`), fewer accepted at T > 0.
        """
        g = self.g
        request = Verify.of(0, root, DraftTree.chain(sent, None, q), g.sampling)
        started = time.perf_counter()
        reply_task = asyncio.create_task(g.ask(request))
        try:
            if late is not None:
                await self.catch_up(late.root, late)
            await self.draft_ahead(reply_task, len(sent))
            reply = await reply_task
        finally:
            reply_task.cancel()
        assert isinstance(reply, Verified)
        g.verified(len(sent), reply, time.perf_counter() - started)
        return reply

    async def catch_up(self, root: int, late: CatchUp | None = None) -> None:
        """A chain below ``root``: the draft first takes in ``late``'s vectors (if any), and the chain
        starts from the tokens drafted ahead past it."""

        def on_worker() -> IncrementalChain:
            if late is None:
                return self.g.start_chain(root)
            self.g.take_round(late.committed, late.reply)
            return self.g.start_chain(root, late.ahead, late.ahead_q)

        self.chain = await self.g.work(on_worker)

    async def draft_ahead(self, reply: asyncio.Task[Reply], sent: int) -> None:
        """Draft past the chain in flight until the reply comes (or enough for the next chain is ready)."""
        assert self.chain is not None
        budget = sent + 1 + (self.g.gamma(peek=True) or 0)
        while not reply.done() and len(self.chain.tokens) < budget and self.g.drafter.observed:
            if self.chain.stalled:
                return
            await self.grow(1)

    async def grow(self, n: int) -> None:
        if n <= 0:
            return
        assert self.chain is not None
        started = time.perf_counter()
        await self.g.work(self.chain.grow, n)
        self.g.pacer.record_steps(n, time.perf_counter() - started)
        self.g.progress.drafted(time.perf_counter() - started)

    def drafted(self, gamma: int) -> tuple[list[int], SparseProposal | None]:
        """The chain's first ``gamma`` tokens and their top-K proposals (None: deterministic)."""
        assert self.chain is not None
        return self.chain.tokens[:gamma], self.chain.sparse_q(gamma)

    def ahead(self, sent: list[int], reply: Verified) -> tuple[list[int], list[Proposal]]:
        """The tokens drafted past ``sent`` (and their q), if they continue what the target confirmed."""
        assert self.chain is not None
        drafted, n = self.chain.tokens, len(sent)
        if reply.accepted.numel() == n and len(drafted) > n and drafted[n] == reply.next_token:
            return drafted[n + 1 :], self.chain.q[n + 1 :]
        return [], []


async def tree_round(g: Generation) -> None:
    """One round with an EAGLE-2 tree (no q at T > 0: see the module docstring): draft, Verify, confirm."""
    t, caps, root = g.transcript, g.session.capabilities, g.transcript.root
    room = min(caps.max_context - len(t.context) - 1, caps.max_tree_nodes)
    shape = dataclasses.replace(g.shape, tree_total=max(1, min(g.shape.tree_total, room)))
    started = time.perf_counter()
    tree = await g.work(g.drafter.tree, root, shape)
    g.progress.drafted(time.perf_counter() - started)
    sent = time.perf_counter()
    reply = await g.ask(Verify.of(0, root, tree, g.sampling))
    assert isinstance(reply, Verified)
    path = [tree.tokens[i - 1] for i in reply.accepted.tolist()]
    server_s = (reply.timings.queue_ms + reply.timings.forward_ms) / 1e3
    g.pacer.record_round(len(path) + 1, len(path), time.perf_counter() - sent, server_s)
    g.progress.verified(max(tree.depths), len(path), time.perf_counter() - sent)
    await g.scribe.run(t.confirm_round, path, [], reply.next_token)
    await g.work(g.take_round, [root, *path], reply)
    passed(g)
    if t.stop is None:
        g.offline.follow(t.context)
