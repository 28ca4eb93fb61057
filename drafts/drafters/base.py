"""The narrow interface every drafter implements (prompt lookup, oracle, MoA, EAGLE, ...).

A drafter *declares* the target activations it needs (``needs``); the decoding loop asks the
target runner for exactly those and hands them back through ``observe`` for the tokens the
target has committed. Each round the loop calls ``propose`` for a tree (or chain) of
candidates below the root token (the newest token the target has not processed). A drafter
whose state can be cut back to a prefix (:class:`Rewindable`) lets a conversation's next turn
reuse what it observed of the earlier ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from drafts.errors import ConfigError
from drafts.sampling import SamplingConfig
from drafts.target.activations import ActivationRequest, Activations
from drafts.tree import DraftTree


@dataclass(frozen=True)
class DraftShape:
    """How much to draft per round: a chain of ``gamma`` tokens, or an EAGLE-2 dynamic tree."""

    gamma: int = 4  # chain length (ignored for trees)
    tree_depth: int = 0  # 0 = chain drafting; else the tree's maximum depth
    tree_top_k: int = 0  # children expanded per node and beam width per depth
    tree_total: int = 0  # drafted nodes kept for verification (the root excluded)
    min_confidence: float = 0.0  # chains: stop where the draft's top probability is below this (0 = off)

    def __post_init__(self) -> None:
        if self.gamma < 0:
            raise ConfigError(f"--chain must be >= 0, got {self.gamma}")
        if not 0.0 <= self.min_confidence < 1.0:
            raise ConfigError(f"--confidence must be in [0, 1), got {self.min_confidence}")
        if self.min_confidence and self.tree_depth > 0:
            raise ConfigError("--confidence applies to chains (a dynamic tree ranks by confidence already); drop one")
        if self.is_tree and min(self.tree_depth, self.tree_top_k, self.tree_total) < 1:
            raise ConfigError("--tree takes DEPTH,TOPK,TOTAL, each >= 1 (e.g. --tree 4,4,16)")

    @property
    def is_tree(self) -> bool:
        return self.tree_depth > 0

    @classmethod
    def parse_tree(cls, text: str) -> DraftShape:
        """``"DEPTH,TOPK,TOTAL"`` -> a tree shape."""
        try:
            depth, top_k, total = (int(x) for x in text.split(","))
        except ValueError as exc:
            raise ConfigError(f"--tree takes DEPTH,TOPK,TOTAL as integers (e.g. 4,4,16), got {text!r}") from exc
        return cls(gamma=depth, tree_depth=depth, tree_top_k=top_k, tree_total=total)

    def describe(self) -> str:
        if self.is_tree:
            return f"tree {self.tree_depth},{self.tree_top_k},{self.tree_total}"
        if self.min_confidence:
            return f"chain {self.gamma}, confidence {self.min_confidence:g}"
        return f"chain {self.gamma}"

    def keeps(self, confidence: float) -> bool:
        """Whether a chain goes on at a position where the draft's top probability is ``confidence``."""
        return confidence >= self.min_confidence


class Drafter(Protocol):
    """Proposes candidate tokens; learns what the target committed."""

    name: str
    needs: ActivationRequest

    def begin(self, prompt: list[int]) -> None:
        """Start a new generation for ``prompt`` (drop all per-sequence state)."""

    def observe(self, committed: list[int], acts: Activations, next_token: int) -> None:
        """The target committed ``committed`` (with their activations); ``next_token`` is the new root."""

    def propose(
        self, context: list[int], shape: DraftShape, cfg: SamplingConfig, generator: torch.Generator | None
    ) -> DraftTree:
        """Candidates below the root ``context[-1]``; ``context`` is the whole sequence so far."""
        ...


@runtime_checkable
class Rewindable(Protocol):
    """A drafter whose observed state can be cut back to a prefix (the trained drafts can)."""

    def truncate(self, length: int) -> None:
        """Forget every observed token from position ``length`` on."""
