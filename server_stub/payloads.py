"""Vectors on the wire, as this server sends them: float16, encoded by :mod:`drafts.protocol.vectors`.

float16 halves float32's bytes and is what the draft runs in on most clients; its range
(65,504) holds the activations of the targets we serve. The names and the decoding the client
does live with the protocol, so both ends share them.
"""

from __future__ import annotations

import torch

from drafts.protocol import vectors
from drafts.target.activations import Activations

PAYLOAD = "float16"  # Capabilities.payload
_DTYPE = torch.float16


def to_wire(acts: Activations) -> dict[str, torch.Tensor]:
    """The activations of a reply, by wire name."""
    return vectors.to_wire(acts, _DTYPE)
