"""The newest draft proposal of one proposing Generate: set by its connection's reader, read before each step.

Speculative streaming (protocol 6, :mod:`drafts.protocol.messages`): while the server decodes a
``Generate(propose=True)``, the client streams ``Propose`` messages for it. The connection's
reader puts each into the request's box as it arrives, ahead of the request queue (as a Cancel
reaches its :class:`~server_stub.cancels.CancelToken`); the generation loop asks the box for
this step's tree before each step. A newer proposal replaces the older one; a proposal stays in
the box until replaced, so a deep one can serve several steps (each step keeps only the part
that still applies: :func:`drafts.proposal_match.applicable_subtree`, exact at T > 0 too, since
the nodes a later step keeps were never looked at by an earlier one). A malformed Propose for
the request fails it: the box holds the Error, and the loop answers the Generate with it.

Everything here runs on the event loop: no locks.
"""

from __future__ import annotations

from collections.abc import Sequence

from drafts.proposal_match import applicable_subtree
from drafts.protocol import Error, Propose
from drafts.tree import DraftTree

ROOT_ALONE = DraftTree.chain([])


class ProposalBox:
    """The newest proposal for one running proposing Generate (or the Error that failed it)."""

    def __init__(self) -> None:
        self.newest: Propose | None = None
        self.tree: DraftTree | None = None  # newest's tree, built once
        self.failure: Error | None = None  # a malformed Propose named this request
        self.received = 0  # proposals put, for the logs and tests

    def put(self, proposal: Propose) -> None:
        self.newest, self.tree = proposal, None
        self.received += 1

    def fail(self, error: Error) -> None:
        if self.failure is None:
            self.failure = error

    def step_tree(self, tokens: Sequence[int], start: int, limit: int, max_depth: int) -> DraftTree:
        """The tree to verify below the newest of ``tokens`` (session indices ``start``...): the part
        of the newest proposal that still applies, at most ``limit`` nodes ``max_depth`` deep, or
        the root alone."""
        if self.newest is None or limit < 1 or max_depth < 1:
            return ROOT_ALONE
        if self.tree is None:
            self.tree = self.newest.tree
        kept = applicable_subtree(self.tree, self.newest.base, tokens, start, limit, max_depth)
        return ROOT_ALONE if kept is None else kept
