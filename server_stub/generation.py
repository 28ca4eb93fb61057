"""Generate: the target decodes on the server, one streamed part per step; with proposals, speculative streaming.

Each step is a Verify job (the same batched forward, the same acceptance rule as every session's
verifications): of the root alone for a plain Generate (the "API streaming" baseline, one token a
step), or, for ``Generate(propose=True)``, of the root with the part of the client's newest
proposal that still applies (:mod:`server_stub.proposals`), so a step yields the accepted draft
tokens and then the target's own token::

    step k   root r_k (index c, not processed)  + subtree of the newest Propose below r_k
             -> accepted path x_1..x_a, the target's next token y  -> part (x_1..x_a, y), drafted = a
             -> the session committed r_k, x_1..x_a (c + 1 + a tokens); y is the next root

The output ends at a stop token (included; one inside the accepted path cuts the part there and
the session is rewound so that, as after a plain Generate, it holds every output token but the
newest), after ``max_new_tokens`` tokens (the tree is cut so a step never overshoots), when the
context has no room for the next root (the tree is cut to fit), at a Cancel (a ``cancelled`` part,
no token), or at a malformed Propose for the request (the Generate's reply is its Error). The
last part is returned, not sent: it is the request's reply. At T = 0 the tokens are those of a
plain Generate whatever the proposals are: greedy acceptance keeps exactly the target's argmax.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import torch

from drafts.protocol import Capabilities, Error, Generate, Generated, Timings
from drafts.tree import DraftTree
from server_stub.backend.base import VerifyJob, VerifyOutcome
from server_stub.cancels import CancelToken
from server_stub.errors import RequestCancelledError
from server_stub.payloads import to_wire
from server_stub.proposals import ROOT_ALONE, ProposalBox
from server_stub.sessions import SessionRecord, SessionRegistry
from server_stub.worker import InferenceWorker

SendPart = Callable[[Generated], Awaitable[None]]


async def stream_generation(
    request: Generate,
    record: SessionRecord,
    worker: InferenceWorker,
    send_part: SendPart,
    caps: Capabilities,
    cancel: CancelToken,
    box: ProposalBox | None = None,
) -> Generated | Error:
    """Decode after the root, streaming each step's part; the last part (or an Error) is the reply."""
    run = _Generation(request, record, worker, caps, box)
    if box is not None:
        run.start = await run.session_length()
    while True:
        if box is not None and box.failure is not None:
            return box.failure
        tree = run.next_tree()
        job = VerifyJob(record.session_id, run.root, tree, request.sampling, run.generator)
        try:
            cancel.check(request.request_id)
            outcome, waited = await worker.verify(job, cancel)
        except RequestCancelledError:
            return await _cancelled(request, record, worker, run.committed)
        part = await run.advance(tree, outcome, waited)
        if part.done:
            return part
        await send_part(part)


class _Generation:
    """One Generate's progress: the tokens since its root, what the session holds, what is left."""

    def __init__(
        self,
        request: Generate,
        record: SessionRecord,
        worker: InferenceWorker,
        caps: Capabilities,
        box: ProposalBox | None,
    ) -> None:
        self.request, self.record, self.worker, self.caps, self.box = request, record, worker, caps, box
        self.stops = set(request.stop_tokens.tolist())
        self.generator = SessionRegistry.generator(record, request.sampling)
        self.tokens = [request.root_token]  # session indices start, start + 1, ...; the newest is the root
        self.start = 0  # the root's session index (known for a proposing Generate)
        self.produced = 0  # output tokens so far
        self.committed: int | None = None  # the session's length after the last step (None: none ran)

    @property
    def root(self) -> int:
        return self.tokens[-1]

    async def session_length(self) -> int:
        session_id = self.record.session_id
        length, _ = await self.worker.call(lambda backend: backend.committed(session_id), session_id)
        return int(length)

    def next_tree(self) -> DraftTree:
        """This step's tree: the root alone, or the part of the newest proposal that fits."""
        if self.box is None:
            return ROOT_ALONE
        c = self.start + len(self.tokens) - 1  # the root's index
        room = min(self.caps.max_tree_nodes, self.caps.max_context - c - 1)  # c + 1 + N <= max_context
        depth = self.request.max_new_tokens - self.produced - 1  # a step yields depth + 1 tokens at most
        return self.box.step_tree(self.tokens, self.start, room, depth)

    async def advance(self, tree: DraftTree, outcome: VerifyOutcome, waited: float) -> Generated:
        """The part of one step: its tokens, cut at a stop token or the token budget (the session follows)."""
        path = [tree.tokens[i - 1] for i in outcome.acceptance.path]
        step = [*path, outcome.acceptance.next_token]
        kept = self._kept(step)
        committed = outcome.committed
        if len(kept) < len(step):  # cut inside the accepted path: drop what follows the newest kept token
            committed = await self._rewind(committed - len(step) + len(kept))
        self.committed = committed
        self.produced += len(kept)
        self.tokens += kept
        done = (
            len(kept) < len(step)
            or kept[-1] in self.stops
            or self.produced >= self.request.max_new_tokens
            or committed + 1 > self.caps.max_context
        )
        timings = Timings(waited, outcome.timings.forward_ms)
        part = Generated(self.request.request_id, torch.tensor(kept), committed, done, timings)
        if self.box is None:
            return part  # plain streaming: no activations, nothing drafted
        activations = {name: rows[: len(kept)] for name, rows in to_wire(outcome.vectors).items()}
        return Generated(
            part.request_id,
            part.tokens,
            committed,
            done,
            timings,
            drafted=min(len(path), len(kept)),
            activations=activations,
        )

    def _kept(self, step: list[int]) -> list[int]:
        """The step's tokens up to the first stop token (included) and within ``max_new_tokens``."""
        budget = self.request.max_new_tokens - self.produced
        for i, token in enumerate(step[:budget]):
            if token in self.stops:
                return step[: i + 1]
        return step[:budget]

    async def _rewind(self, length: int) -> int:
        session_id = self.record.session_id
        committed, _ = await self.worker.call(lambda backend: backend.rewind(session_id, length), session_id)
        return int(committed)


async def _cancelled(
    request: Generate, record: SessionRecord, worker: InferenceWorker, committed: int | None
) -> Generated:
    """The done part of a cancelled Generate: no token, the session's committed length."""
    if committed is None:
        session_id = record.session_id
        length, _ = await worker.call(lambda backend: backend.committed(session_id), session_id)
        committed = length
    empty = torch.empty(0, dtype=torch.int64)
    return Generated(request.request_id, empty, committed, done=True, cancelled=True)
