"""The draft's half of a speculative stream: take in each part's vectors, propose below its newest token.

    took(part)   a Generated part was shown (on the loop): its committed tokens and vectors wait
                 for the draft, and the newest token (index ``part.committed``) becomes the root
                 of the next proposal
    _run         one draft at a time, on the draft's worker thread: take in the waiting vectors,
                 draft a tree (a chain shape: a fan of ``EngineConfig.stream_width`` chains,
                 :mod:`drafts.neural.fan`, led by the lag ``EngineConfig.stream_lag`` sets or
                 :mod:`app.engine.lag` measures) below the newest root,
                 ``EngineConfig.stream_lead`` tokens deeper than the shape (and lag - 1 more), send
                 it as Propose(base=root's index). When it ends, if newer parts came meanwhile,
                 draft again from the newest: a proposal is never drafted from a root the server
                 is known to be past, and one that those parts already contradict (the server's
                 rule) is dropped unsent
    settle       the stream ended (or the link died): the last draft is done and the draft holds
                 every vector the server sent, as the round-based generation expects

The server walks a proposal along the tokens it produced after ``base`` and verifies what still
applies (the agreed rule: :mod:`drafts.proposal_match`), so a proposal that arrives a step or two
late still counts as long as it guessed those steps; a deeper tree survives more of the round trip.
It arrives one step late or more (the server never waits), so its first level is a guess of the
token the server made meanwhile: hence the fan, several guesses for it (s11 stream-hits); on a slow
link two steps late (s12 stream-lead), so the fan covers the likeliest pairs of tokens.
How late they were and how much applied is counted per part (:mod:`app.engine.proposal_tally`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

from app.engine.lag import LagEstimate
from app.engine.proposal_tally import ProposalTally
from drafts.proposal_match import applicable_subtree
from drafts.protocol import Generated, Propose
from drafts.tree import DraftTree

if TYPE_CHECKING:
    from app.engine.generation import Generation


class Taken(NamedTuple):
    """A part the draft has not taken in yet: the tokens it committed, from session index ``start``."""

    start: int  # index of committed[0] (the step's root)
    committed: list[int]  # the step's root, then every token of the part but the newest
    part: Generated  # its activations: one row per committed token


class Sent(NamedTuple):
    """A proposal sent: its root's session index, its tree, and when (perf_counter seconds)."""

    base: int
    tree: DraftTree
    at: float


class Proposer:
    """See the module docstring. Lives on the event loop; drafting runs on the draft's worker."""

    def __init__(self, g: Generation, base: int, root: int) -> None:
        self.g = g
        self.base, self.root = base, root  # the newest token the stream knows of, and its session index
        self.waiting: list[Taken] = []  # parts whose vectors the draft has not taken in
        self.request_id: int | None = None  # the proposing Generate's
        self.live = True
        self.stale = True  # the newest root has no proposal yet
        self.lost_step = False  # a part did not follow the one before: no more proposals (the draft catches up later)
        self.task: asyncio.Task[None] | None = None
        self.start = base  # session index of known[0]
        self.known = [root]  # the session's tokens from the stream's first root on, as the parts told them
        self.sent: deque[Sent] = deque(maxlen=8)  # the newest proposals sent, oldest first
        self.part_at = time.perf_counter()  # when the last part came (the Generate's start at first)
        self.tally = ProposalTally()
        self.lag = LagEstimate(g.config.stream_lag)

    def started(self, request_id: int) -> None:
        """The Generate got its id (it is being sent): draft below the stream's first root."""
        self.request_id = request_id
        self.kick()

    def took(self, part: Generated, seconds: float) -> None:
        """A part arrived, ``seconds`` after the last: the draft takes in its vectors, drafts below its newest token."""
        tokens = part.tokens.tolist()
        if not tokens or self.lost_step:
            return
        if self.base != self.start:  # not the first part (the prompt's way): ``seconds`` is one server step
            self.lag.stepped(seconds)
        self._count(part, len(tokens), seconds)
        if part.committed != self.base + len(tokens):  # not one step after the last: nothing more to follow
            self.lost_step = True
            return
        self.waiting.append(Taken(self.base, [self.root, *tokens[:-1]], part))
        self.base, self.root = part.committed, tokens[-1]
        self.known += tokens
        self.kick()

    def _count(self, part: Generated, n: int, seconds: float) -> None:
        """Into the tally: the part's step, with the lag and applied nodes of the proposal it (at most) had.

        The step began as the server sent the part before, half a round trip before it came here;
        a proposal reaches the server half a round trip after it is sent: so the step had at most
        the newest proposal sent a round trip before the last part came."""
        rtt = self.g.pacer.rtt_s or 0.0
        cutoff, self.part_at = self.part_at - rtt, time.perf_counter()
        held = next((sent for sent in reversed(self.sent) if sent.at <= cutoff), None)
        c = part.committed - n  # the step's root
        if held is None or not self.start <= c < self.start + len(self.known):
            self.tally.step(seconds, part.drafted, None, 0)
            return
        kept = applicable_subtree(held.tree, held.base, self.known[: c - self.start + 1], self.start, held.tree.size)
        self.tally.step(seconds, part.drafted, c - held.base, 0 if kept is None else kept.size)

    def kick(self) -> None:
        self.stale = True
        if self.live and self.request_id is not None and (self.task is None or self.task.done()):
            self.task = asyncio.create_task(self._run())

    def stop(self) -> None:
        """No more drafting (a cancel): a draft on the worker ends there, unread."""
        self.live = False
        if self.task is not None:
            self.task.cancel()

    async def settle(self) -> None:
        """The last draft is done, and the draft has taken in every part's vectors."""
        self.live = False
        if self.task is not None:
            (outcome,) = await asyncio.gather(self.task, return_exceptions=True)
            if isinstance(outcome, Exception):
                raise outcome  # a draft that failed is a bug to see, not a stream without proposals
        waiting, self.waiting = self.waiting, []
        if waiting:
            await self.g.work(self._take_in, waiting)

    async def _run(self) -> None:
        while self.stale and self.live:
            self.stale = False
            waiting, self.waiting = self.waiting, []
            base, root, arrived, lag = self.base, self.root, self.part_at, self._lag()
            started = time.perf_counter()
            tree = await self.g.work(self._draft, waiting, base, root, lag)
            self.g.progress.drafted(time.perf_counter() - started)
            self.tally.drafted(time.perf_counter() - started)
            if tree is None or not self.live or self.lost_step:
                continue
            if self._applies(base, tree):
                await self._propose(base, tree, lag)
                self.lag.proposed(time.perf_counter() - arrived)
            else:  # a part that came meanwhile spelled another future: the next draft starts at once
                self.tally.skipped()

    def _lag(self) -> int:
        """The lag to lead the next proposal by, the link's round trip brought up to date first."""
        link = self.g.session.link
        rtt = self.g.pacer.rtt_s or getattr(getattr(link, "ws", None), "latency", None)
        self.lag.round_trip(rtt if isinstance(rtt, float) else None)
        return self.lag.lag

    def _applies(self, base: int, tree: DraftTree) -> bool:
        """Whether some of ``tree`` still applies below the newest token known (the server's rule)."""
        if self.base == base:
            return True
        known = self.known[base - self.start :]
        return applicable_subtree(tree, base, known, base, tree.size) is not None

    # -- on the draft's worker -------------------------------------------------------------------
    def _draft(self, waiting: list[Taken], base: int, root: int, lag: int = 1) -> DraftTree | None:
        """Take in ``waiting``, then draft below ``root`` (index ``base``) for a step ``lag`` tokens on;
        None when the draft cannot."""
        self._take_in(waiting)
        if self.g.drafter.observed != base or base == 0:
            return None
        caps = self.g.session.capabilities
        room = min(caps.max_context - base - 1, caps.max_tree_nodes)  # nodes that fit below the root
        if room < 1:
            return None
        shape, lead = self.g.shape, self.g.config.stream_lead
        if shape.is_tree:  # a tree's best-first levels cover the lag's tokens: a level (and its top-k) more per token
            depth = shape.tree_depth + lead + lag - 1
            total = min(shape.tree_total + lead + (lag - 1) * shape.tree_top_k, room)
            return self.g.drafter.tree(root, dataclasses.replace(shape, tree_depth=depth, tree_total=total))
        depth, width = (shape.gamma or self.g.pacer.gamma_max) + lead + lag - 1, self.g.config.stream_width
        if width > 1 and room >= 2 * width:  # a fan: the top guesses for the server's next tokens, a chain below each
            depth = min(depth, room // width)
            return self.g.drafter.fan(root, width, depth, min(lag, depth - 1))
        chain = self.g.start_chain(root)
        chain.grow(min(depth, room))
        return DraftTree.chain(chain.tokens, None, chain.sparse_q(len(chain.tokens)))

    def _take_in(self, waiting: list[Taken]) -> None:
        drafter = self.g.drafter
        for start, committed, part in waiting:
            if drafter.observed != start:
                return  # the draft does not hold what comes before: the next start catches it up
            drafter.observe(committed, self.g.acts(part))

    # -- on the loop -----------------------------------------------------------------------------
    async def _propose(self, base: int, tree: DraftTree, lag: int) -> None:
        link = self.g.session.link
        if link is None or self.request_id is None or not tree.size:
            return
        await link.tell(Propose.of(self.request_id, base, tree))
        self.sent.append(Sent(base, tree, time.perf_counter()))
        self.tally.sent(tree.size, self.base - base, lag)
        self.g.transcript.counts.drafted += max(tree.depths)  # drafted depth sent (the figures' acceptance)
