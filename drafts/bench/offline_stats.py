"""Kept offline tokens: how many of an offline continuation the verifier's repair keeps, summarised.

At T = 0 the repair keeps the offline text up to the first token where it differs from the
target's own greedy continuation from the cut, so a continuation of ``H`` tokens keeps
``k = common_prefix(offline, target)`` of them, and at a shorter horizon ``h`` keeps
``min(k, h)``. Over the samples (answer x cut) of one method:

- ``kept[h]``: mean kept tokens at horizon ``h``, and ``fraction[h] = kept[h] / h``;
- ``survival[d]``: the share of samples that keep at least ``d`` tokens (acceptance at offline
  depth ``d``, ``d = 1..H``); ``conditional[d] = survival[d] / survival[d - 1]``, the chance that
  depth ``d`` is kept once every earlier one was;
- ``distribution``: how many samples keep exactly ``k`` tokens, ``k = 0..H``;
- ``token_accuracy`` (``token_accuracy_by_depth``): the share of all positions (of depth ``d``)
  where the token equals the target's, wherever the first difference fell. For a draft fed the
  target's own tokens (diagnostics in :mod:`drafts.bench.offline_continuation`) it is the
  draft's accuracy at each depth over every sample, not only those still alive.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from drafts.target.chat import common_prefix


def kept_tokens(offline: Sequence[int], target: Sequence[int]) -> int:
    """Offline tokens the repair keeps: the common prefix with the target's continuation."""
    return common_prefix(offline, target)


@dataclass
class KeptCounts:
    """The kept counts of one method at the longest horizon, one per sample."""

    horizon: int  # the longest horizon: every continuation has this many tokens
    counts: list[int] = field(default_factory=list)
    matches: list[int] = field(default_factory=list)  # per depth: samples whose token there is the target's

    def __post_init__(self) -> None:
        self.matches = self.matches or [0] * self.horizon

    def add(self, offline: Sequence[int], target: Sequence[int]) -> int:
        if len(target) != self.horizon or len(offline) < self.horizon:
            raise ValueError(f"expected {self.horizon} tokens, got {len(offline)} offline and {len(target)} target")
        k = kept_tokens(offline[: self.horizon], target)
        self.counts.append(k)
        for d, (a, b) in enumerate(zip(offline, target, strict=False)):
            self.matches[d] += a == b
        return k

    def mean_kept(self, h: int) -> float:
        return sum(min(k, h) for k in self.counts) / len(self.counts) if self.counts else 0.0

    def survival(self) -> list[float]:
        """share of samples keeping at least d tokens, d = 1..horizon."""
        n = len(self.counts)
        return [sum(k >= d for k in self.counts) / n if n else 0.0 for d in range(1, self.horizon + 1)]

    def conditional(self) -> list[float | None]:
        """P(depth d kept | depths < d kept), d = 1..horizon; None where no sample got that far."""
        alive = [1.0, *self.survival()]
        return [alive[d] / alive[d - 1] if alive[d - 1] else None for d in range(1, self.horizon + 1)]

    def distribution(self) -> list[int]:
        return [self.counts.count(k) for k in range(self.horizon + 1)]

    def summary(self, horizons: Sequence[int]) -> dict[str, Any]:
        n = len(self.counts)
        return {
            "samples": len(self.counts),
            "kept": {str(h): self.mean_kept(h) for h in horizons},
            "fraction": {str(h): self.mean_kept(h) / h for h in horizons},
            "kept_sem": {str(h): standard_error([min(k, h) for k in self.counts]) for h in horizons},
            "survival_by_depth": self.survival(),
            "conditional_by_depth": self.conditional(),
            "distribution": self.distribution(),
            "token_accuracy": sum(self.matches) / (self.horizon * n) if n else 0.0,
            "token_accuracy_by_depth": [m / n if n else 0.0 for m in self.matches],
        }


def standard_error(values: Sequence[int]) -> float | None:
    """Standard error of the mean (None below two samples)."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
