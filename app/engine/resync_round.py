"""Rounds that re-sync the offline text: after a repair that rejected, the offline tokens left (the
tail) go on as a lookup draft beside the draft's own (:mod:`drafts.decoding.resync`, the rule).

The repair keeps the tail (:func:`keep_tail`). While it is live, each online round asks
:func:`due`: with a tree shape always, with chains when the tail holds the root. If so the round
is a re-sync round (:func:`resync_round`), top to bottom:

    1. the draft's own proposal in the verifier's node limit less a reserve for the lookup (half,
       at most the rule's ``nodes``): its EAGLE-2 tree, or its chain (sent without q: a
       deterministic proposal, lossless at any temperature, :mod:`drafts.acceptance`)
    2. the tail's chains grafted on (below the root and below the draft's nodes that the tail
       holds; a node of both kept once: :meth:`~drafts.decoding.resync.OfflineTail.grafted`),
       verified as any tree (Verify)
    3. confirm the accepted path and the target's token; the tail spends the lookup tokens accepted
       (counted as offline tokens kept: ``GenerationStats.kept_after_resync``); the draft takes in
       the round

Otherwise the round is an ordinary one (:mod:`app.engine.online`), after which :func:`passed` tells
the tail (it then proposes only where it holds the new root). The tail is dropped once spent or
after the rule's ``patience`` rounds that proposed and kept nothing. The stream mode
(:mod:`app.engine.stream_generation`) does not re-sync.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from drafts.decoding.resync import OfflineTail, spent_on
from drafts.protocol import Verified, Verify
from drafts.tree import DraftTree

if TYPE_CHECKING:
    from app.engine.generation import Generation


def keep_tail(g: Generation, offline: list[int], accepted: int) -> None:
    """A repair verified ``offline``'s first ``accepted`` tokens and rejected the next: the rest is the tail."""
    rule = g.config.resync
    g.tail = OfflineTail(tuple(offline[accepted:]), rule) if rule and accepted < len(offline) else None


def due(g: Generation) -> bool:
    """The next round is a re-sync round: the tail is live, and the draft proposes a tree (its rounds
    cost the same with the tail grafted on) or the tail holds the root (chains: drafting ahead
    and q wait for a round where the tail proposes at once)."""
    if g.tail is not None and not g.tail.live:
        g.tail = None
    return g.tail is not None and (g.shape.is_tree or bool(g.tail.starts(g.transcript.root)))


def passed(g: Generation) -> None:
    """An ordinary round went by (no lookup chains in it): the root no longer replaced a tail token."""
    if g.tail is not None:
        g.tail.advance([], proposed=False)


async def resync_round(g: Generation) -> None:
    """One round with the tail's lookup chains merged into the draft's proposal; see the module docstring."""
    assert g.tail is not None
    t, caps, root = g.transcript, g.session.capabilities, g.transcript.root
    if g.gamma() is None:
        return  # the context is full: the stop
    room = min(
        caps.max_context - len(t.context) - 1, caps.max_tree_nodes, g.decode.max_new_tokens - len(t.confirmed) - 1
    )
    unspent = len(g.tail.tokens) - len(g.tail.spent)
    reserved = min(room // 2 if room > 1 else room, g.tail.config.nodes, unspent)
    started = time.perf_counter()
    own = await g.work(_drafted, g, root, room - reserved) if room > reserved else DraftTree.chain([])
    g.progress.drafted(time.perf_counter() - started)
    grafted = g.tail.grafted(own, root, room - own.size)
    tree, origin = grafted.tree, grafted.origin
    sent = time.perf_counter()
    reply = await g.ask(Verify.of(0, root, tree, g.sampling))
    assert isinstance(reply, Verified)
    nodes = reply.accepted.tolist()
    path = [tree.tokens[i - 1] for i in nodes]
    server_s = (reply.timings.queue_ms + reply.timings.forward_ms) / 1e3
    g.pacer.record_round(len(path) + 1, len(path), time.perf_counter() - sent, server_s)
    g.progress.verified(max(tree.depths), len(path), time.perf_counter() - sent)
    before = len(t.confirmed)
    await g.scribe.run(t.confirm_round, path, [], reply.next_token)
    kept = g.tail.advance(spent_on(nodes, origin), proposed=grafted.proposes)
    t.counts.resynced += min(kept, len(t.confirmed) - before)  # a stop may cut the path short
    await g.work(g.take_round, [root, *path], reply)
    if t.stop is None:
        g.offline.follow(t.context)


def _drafted(g: Generation, root: int, room: int) -> DraftTree:
    """On the worker: the draft's own proposal below ``root`` in ``room`` nodes, deterministic."""
    shape = g.shape
    if g.drafter.observed == 0:
        return DraftTree.chain([])  # no target state seen yet: the draft cannot propose
    if shape.is_tree:
        return g.drafter.tree(root, dataclasses.replace(shape, tree_total=max(1, min(shape.tree_total, room))))
    gamma = min(room, g.gamma(peek=True) or 0)
    chain = g.start_chain(root)
    chain.grow(gamma)  # its q is not sent: a deterministic proposal
    return DraftTree.chain(chain.tokens[:gamma])
