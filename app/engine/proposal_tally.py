"""How a speculative stream's proposals fared: how stale they were, how much of them applied, at what cost.

Counted on the client (:mod:`app.engine.proposer`) from what it sent and the parts it got back. The
server steps without waiting, so which proposal a step used is not on the wire; the tally takes
the newest one sent before the *previous* part arrived (the step began as the server sent that
part, so a later proposal cannot have been there: an upper bound on what the server held) and
replays the server's rule (:func:`drafts.proposal_match.applicable_subtree`) on it::

    lag         tokens the session made after the proposal's base, up to this step's root
                (0: drafted from this very root; the server never waits, so usually >= 1)
    applied     nodes of that proposal below this step's root (what the step verified)
    accepted    drafted tokens the step kept (``Generated.drafted``: exact, from the server)
    stale_sent  tokens the client already knew past a proposal's base when it sent it
    led         the lag a proposal was drafted for (:mod:`app.engine.lag`: its fan's lead)
    skipped     proposals not sent: a part that came while drafting showed they no longer apply
"""

from __future__ import annotations

from dataclasses import dataclass, field

LAG_BUCKETS = 5  # lag 0, 1, 2, 3, and 4 or more


@dataclass(frozen=True)
class ProposalStats:
    """One stream's proposal figures (sums; the bench divides)."""

    steps: int = 0  # server steps (parts) seen
    steps_with_proposal: int = 0  # steps for which a proposal had been sent (the lag is known)
    lag_counts: tuple[int, ...] = (0,) * LAG_BUCKETS  # steps by the lag of their proposal
    steps_applied: int = 0  # steps whose proposal applied (at least one node below the root)
    applied_nodes: int = 0
    accepted: int = 0
    step_s: float = 0.0  # part to part, on the client
    proposals: int = 0  # sent
    skipped: int = 0
    nodes_sent: int = 0
    stale_sent: int = 0  # summed over the proposals sent
    led: int = 0  # summed over the proposals sent
    draft_s: float = 0.0  # on the draft's worker: the parts' vectors taken in, then the draft

    def __add__(self, other: ProposalStats) -> ProposalStats:
        counts = tuple(a + b for a, b in zip(self.lag_counts, other.lag_counts, strict=True))
        sums = {name: getattr(self, name) + getattr(other, name) for name in _SUMS}
        return ProposalStats(lag_counts=counts, **sums)

    def to_json(self) -> dict[str, float | list[int] | None]:
        steps, sent, known = max(self.steps, 1), max(self.proposals, 1), max(self.steps_with_proposal, 1)
        lag = sum(min(i, LAG_BUCKETS - 1) * n for i, n in enumerate(self.lag_counts))
        return {
            "steps": self.steps,
            "lag_counts": list(self.lag_counts),  # lag 0, 1, 2, 3, 4+
            "mean_lag": lag / known if self.steps_with_proposal else None,  # 4+ counted as 4
            "applied_share": self.steps_applied / steps,  # of all steps
            "applied_nodes_per_step": self.applied_nodes / steps,
            "accepted_per_step": self.accepted / steps,
            "step_ms": 1e3 * self.step_s / steps,
            "draft_ms": 1e3 * self.draft_s / max(self.proposals + self.skipped, 1),
            "proposals_per_step": self.proposals / steps,
            "skipped": self.skipped,
            "nodes_per_proposal": self.nodes_sent / sent,
            "stale_when_sent": self.stale_sent / sent,
            "led_per_proposal": self.led / sent,
        }


_SUMS = [name for name in ProposalStats.__dataclass_fields__ if name != "lag_counts"]


@dataclass
class ProposalTally:
    """The running counts behind :class:`ProposalStats` (on the event loop)."""

    lag_counts: list[int] = field(default_factory=lambda: [0] * LAG_BUCKETS)
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_SUMS, 0))

    def step(self, seconds: float, accepted: int, lag: int | None, applied: int) -> None:
        """One part: its step time, its drafted tokens, and the lag and applied nodes of its proposal."""
        self._add(steps=1, step_s=seconds, accepted=accepted)
        if lag is not None:
            self.lag_counts[min(lag, LAG_BUCKETS - 1)] += 1
            self._add(steps_with_proposal=1, steps_applied=int(applied > 0), applied_nodes=applied)

    def drafted(self, seconds: float) -> None:
        self._add(draft_s=seconds)

    def sent(self, nodes: int, stale: int, led: int = 1) -> None:
        self._add(proposals=1, nodes_sent=nodes, stale_sent=stale, led=led)

    def skipped(self) -> None:
        self._add(skipped=1)

    def stats(self) -> ProposalStats:
        ints = {k: v if k.endswith("_s") else int(v) for k, v in self.sums.items()}
        return ProposalStats(lag_counts=tuple(self.lag_counts), **ints)  # type: ignore[arg-type]

    def _add(self, **amounts: float) -> None:
        for name, amount in amounts.items():
            self.sums[name] += amount
