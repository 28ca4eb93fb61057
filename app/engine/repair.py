"""A repair: the offline tokens are verified as chains once the link is back, and replaced from
the first one the target rejects.

Top to bottom (:func:`repair`): send the first piece of the offline tokens (up to the verifier's
``max_tree_nodes`` and the context left) as one chain below the root, each token a deterministic
proposal (q = None: lossless at any temperature, :mod:`drafts.acceptance`); the draft takes in
the verified tokens; the transcript replaces the piece by what the verifier kept and its own next
token (a Repaired event). A piece accepted whole whose next token is the offline one after it
leaves the rest of the span for the next repair; otherwise the whole span is replaced from the
rejection, and the offline tokens after it are kept as a lookup draft for the next online rounds
(:mod:`app.engine.resync_round`: they often follow the text again a token later). The generation
calls this while offline tokens remain, then goes back online.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.resync_round import keep_tail
from drafts.decoding.events import TokenSource
from drafts.protocol import Verified, Verify
from drafts.tree import DraftTree

if TYPE_CHECKING:
    from app.engine.generation import Generation


async def repair(g: Generation) -> None:
    """Verify the next piece of the offline tokens; replace them from the first rejection."""
    t, caps = g.transcript, g.session.capabilities
    offline, root = list(t.offline), t.root
    piece = offline[: max(1, min(caps.max_tree_nodes, caps.max_context - len(t.context) - 1))]
    reply = await g.ask(Verify.of(0, root, DraftTree.chain(piece), g.sampling))
    assert isinstance(reply, Verified)
    accepted, token = len(reply.acceptance.path), reply.next_token
    await g.work(g.take_round, [root, *piece[:accepted]], reply)
    g.progress.verified(len(piece), accepted, 0.0)
    sources = [TokenSource.DRAFT_ACCEPTED] * accepted + [TokenSource.TARGET]
    if accepted == len(piece) < len(offline) and token == offline[accepted]:  # the span goes on: next piece
        await g.scribe.run(t.repair, accepted + 1, piece + [token], sources, accepted + 1)
    else:
        await g.scribe.run(t.repair, len(offline), piece[:accepted] + [token], sources, accepted)
        keep_tail(g, offline, accepted)
    g.offline.follow(t.context)
