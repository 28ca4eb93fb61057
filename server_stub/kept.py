"""The rows a ``Prefill(later=True)`` kept for the client to Fetch (protocol 7, "vectors later").

The prompt runs in one forward and its reply goes back at once, without activations; they wait
here, on the session's record, until the client fetches them in pieces behind its first token
(:mod:`drafts.protocol.messages`). One Prefill's rows at a time: a newer one replaces them, a
Rewind below their end drops them (their tokens are gone), and the Fetch that takes the last of
them frees them. A Fetch needs no model pass, so the connection answers it at once, ahead of the
requests queued or running before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from drafts.protocol import Fetch, Fetched
from server_stub.errors import InvalidRequestError


@dataclass(frozen=True, eq=False)
class KeptRows:
    """Activations of the tokens at session indices ``start`` .. ``end - 1``, by wire name."""

    start: int
    rows: int
    activations: Mapping[str, torch.Tensor]  # name -> (rows, ...)

    @property
    def end(self) -> int:
        return self.start + self.rows

    def fetch(self, request: Fetch) -> Fetched:
        """The rows ``request`` names; InvalidRequestError (BAD_FRAME), naming the rows kept, if not all here."""
        stop = request.start + request.length
        if request.start < self.start or stop > self.end:
            raise InvalidRequestError(
                f"fetch of rows {request.start}..{stop - 1}: this session keeps rows {self.start}..{self.end - 1} "
                "(of its last Prefill with later=true); fetch within them"
            )
        a, b = request.start - self.start, stop - self.start
        return Fetched(request.request_id, request.start, {name: t[a:b] for name, t in self.activations.items()})


def fetch(kept: KeptRows | None, request: Fetch) -> Fetched:
    """The reply to ``request`` from what the session keeps; InvalidRequestError when it keeps nothing."""
    if kept is None:
        raise InvalidRequestError(
            f"fetch of rows {request.start}..{request.start + request.length - 1}: this session keeps no rows; "
            "send Prefill with later=true first, and fetch after its reply"
        )
    return kept.fetch(request)


def after_rewind(kept: KeptRows | None, length: int) -> KeptRows | None:
    """What stays kept once the session is cut to ``length`` tokens (nothing, if that cuts into the rows)."""
    return kept if kept is not None and kept.end <= length else None
