"""Kept offline tokens with re-sync: the repair's common prefix, then the tail as a lookup draft.

The engine keeps the offline tokens after a rejection as a lookup draft
(:mod:`drafts.decoding.resync`, the one home of the rule): offline tokens the target writes
again a little later are verified and kept too. Here, at T = 0, after the common prefix ``k``
(:func:`drafts.bench.offline_stats.kept_tokens`) the target's correction is the first root and
lookup rounds run alone against the target's greedy continuation
(:func:`drafts.decoding.resync.resync_greedy`: no draft tree beside them, so every round
commits the accepted lookup tokens and one target token). The reference runs ``RESYNC_PAST``
target tokens past the horizon, so an alignment late in the span still counts; only offline
tokens are counted, so a horizon ``h`` keeps at most ``h``. Beside them, the lookup tokens sent per
sample (what the verifier paid for the tail: another rule may keep more by sending more).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from drafts.bench.offline_stats import kept_tokens, standard_error
from drafts.decoding.resync import GreedyResync, OfflineTail, ResyncConfig, resync_greedy

RESYNC_PAST = 32  # target tokens past the horizon in the re-sync reference


def kept_with_resync(offline: Sequence[int], reference: Sequence[int], config: ResyncConfig) -> GreedyResync:
    """Offline tokens kept (``kept``): the common prefix with ``reference``, then the tail's re-synced
    tokens; with the rounds and lookup tokens the tail took."""
    k = kept_tokens(offline, reference)
    if k >= min(len(offline), len(reference)):
        return GreedyResync(min(k, len(offline)))
    tail = resync_greedy(OfflineTail(tuple(offline[k:]), config), reference, k + 1)
    return dataclasses.replace(tail, kept=k + tail.kept)


@dataclass
class ResyncCounts:
    """Per horizon ``h``: the kept count with re-sync of each sample's first ``h`` offline tokens."""

    horizons: tuple[int, ...]
    config: ResyncConfig = field(default_factory=ResyncConfig)
    counts: dict[int, list[int]] = field(default_factory=dict)
    nodes: list[int] = field(default_factory=list)  # lookup tokens verified per sample, longest horizon

    def add(self, offline: Sequence[int], reference: Sequence[int]) -> int:
        """One sample (``reference``: the target's continuation, ``RESYNC_PAST`` past the longest
        horizon); returns its count at the longest horizon."""
        longest = max(self.horizons)
        for h in self.horizons:
            sample = kept_with_resync(offline[:h], reference[: h + RESYNC_PAST], self.config)
            self.counts.setdefault(h, []).append(sample.kept)
            if h == longest:
                self.nodes.append(sample.nodes)
        return self.counts[longest][-1]

    def summary(self) -> dict[str, Any]:
        means = {h: sum(c) / len(c) if c else 0.0 for h, c in self.counts.items()}
        return {
            "samples": len(self.counts.get(max(self.horizons), [])),
            "kept": {str(h): m for h, m in means.items()},
            "fraction": {str(h): m / h for h, m in means.items()},
            "kept_sem": {str(h): standard_error(c) for h, c in self.counts.items()},
            "lookup_nodes_per_sample": sum(self.nodes) / len(self.nodes) if self.nodes else 0.0,
            "reference_past_horizon": RESYNC_PAST,
            "rule": asdict(self.config),
        }
