"""What a receiver of frames accepts; checked before anything is allocated."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from drafts.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """What a receiver accepts; checked before anything is allocated."""

    max_frame_bytes: int = 64 * 2**20  # a Prefilled of 2048 SmolLM2 tokens with float16 KV is 47 MB
    max_header_bytes: int = 64 * 2**10  # real headers are under 2 KB
    max_tensors: int = 64  # per frame: a few fields plus the activations a draft needs
    max_tensor_elements: int = 2**24  # per tensor: q of 256 nodes x 49,152 tokens is 12.6 M
    max_tree_nodes: int = 256  # drafted nodes per Verify; one target pass runs over them all
    # drafted nodes per Propose: more than a step verifies (the server keeps the part that still
    # applies and cuts it to max_tree_nodes), bounded so matching one stays cheap
    max_proposal_nodes: int = 1024

    def __post_init__(self) -> None:
        for name, value in dataclasses.asdict(self).items():
            if value <= 0:
                raise ConfigError(f"Limits.{name} must be > 0, got {value}")
