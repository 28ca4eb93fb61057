"""The rows a ``Prefill(later=True)`` kept for the client to Fetch (protocol 7, "vectors later").

The prompt runs in one forward and its reply goes back at once, without activations. What a
Fetch reads waits here, on the session's record: the vectors themselves when the prefill had to
compute them (hidden states: gone after the forward), or nothing but the rows' range when they
come from the KV the prompt left in the cache (all-layer KV, a MoA draft's memory vectors), which
the backend turns into vectors when they are fetched (:meth:`TargetBackend.vectors`), so even
the MoA compressor's pass over the prompt runs after the first token. One Prefill's rows at a
time: a newer one replaces them, a Rewind below their end drops them (their tokens are gone),
and the Fetch that takes the last of them frees them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from drafts.protocol import Capabilities, Fetch
from server_stub.errors import InvalidRequestError


@dataclass(frozen=True, eq=False)
class KeptRows:
    """The tokens at session indices ``start`` .. ``end - 1``: their vectors by wire name, or None (from the KV)."""

    start: int
    rows: int
    activations: Mapping[str, torch.Tensor] | None  # name -> (rows, ...); None: computed when fetched

    @property
    def end(self) -> int:
        return self.start + self.rows

    def slice(self, request: Fetch) -> Mapping[str, torch.Tensor] | None:
        """The kept vectors of the rows ``request`` names (None: to compute from the KV)."""
        a, b = request.start - self.start, request.start + request.length - self.start
        return None if self.activations is None else {name: t[a:b] for name, t in self.activations.items()}


def check(kept: KeptRows | None, request: Fetch) -> KeptRows:
    """``kept``, if it holds every row ``request`` names; else InvalidRequestError (BAD_FRAME) naming what it holds."""
    stop = request.start + request.length
    if kept is None:
        raise InvalidRequestError(
            f"fetch of rows {request.start}..{stop - 1}: this session keeps no rows; "
            "send Prefill with later=true first, and fetch after its reply"
        )
    if request.start < kept.start or stop > kept.end:
        raise InvalidRequestError(
            f"fetch of rows {request.start}..{stop - 1}: this session keeps rows {kept.start}..{kept.end - 1} "
            "(of its last Prefill with later=true); fetch within them"
        )
    return kept


def after_rewind(kept: KeptRows | None, length: int) -> KeptRows | None:
    """What stays kept once the session is cut to ``length`` tokens (nothing, if that cuts into the rows)."""
    return kept if kept is not None and kept.end <= length else None


def require_later(caps: Capabilities, fix: str) -> None:
    """Refuse a later Prefill or a Fetch when this server keeps no vectors (``--no-later``), naming ``fix``."""
    if not caps.later:
        raise InvalidRequestError(
            f"this server does not keep vectors for later (started with --no-later: Welcome.capabilities.later is "
            f"false); {fix}"
        )
