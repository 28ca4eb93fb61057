"""How a generation goes, as figures: the rolling StatsUpdated and the final GenerationStats.

One home for both, so the numbers a UI shows during a generation and the ones a benchmark
records at its end are computed the same way. Counts come from the transcript (tokens by
provenance, chains verified and accepted by depth) and the session's traffic (bytes and round
trips since this generation started); times from what the generation reports (``drafted``,
``verified``).
"""

from __future__ import annotations

import time

from app.engine.events import GenerationStats, StatsUpdated
from app.engine.proposal_tally import ProposalTally
from app.engine.session import VerifierSession
from app.engine.transcript import Transcript


class Progress:
    """One generation's figures; see the module docstring."""

    def __init__(self, transcript: Transcript, session: VerifierSession) -> None:
        self.t = transcript
        self.session = session
        traffic = session.traffic
        self._start = (traffic.bytes_up, traffic.bytes_down, traffic.round_trips, session.prefill_sent)
        self._requests = traffic.requests
        self.draft_s = 0.0  # drafting, summed over rounds
        self.verify_s = 0.0  # send -> reply of the verified chains
        self.forwards = 0  # target forwards of a draftless generation (each Generate token)
        self.bytes_down_to_first = 0
        self.proposals: ProposalTally | None = None  # a speculative stream's (app.engine.proposer)
        transcript.on_first_token = self._first_token

    def _first_token(self) -> None:
        self.bytes_down_to_first = self.traffic[1]

    # -- what the generation reports -------------------------------------------------------------
    def drafted(self, seconds: float) -> None:
        self.draft_s += seconds

    def verified(self, proposed: int, accepted: int, seconds: float) -> None:
        counts = self.t.counts
        counts.verify_rounds += 1
        counts.drafted += proposed
        counts.record_chain(proposed, accepted)
        self.verify_s += seconds

    # -- figures ---------------------------------------------------------------------------------
    @property
    def traffic(self) -> tuple[int, int, int, int]:
        """(bytes up, bytes down, round trips, prompt tokens prefilled) since this generation started."""
        t, s = self.session.traffic, self.session
        up, down, trips, sent = self._start
        return t.bytes_up - up, t.bytes_down - down, t.round_trips - trips, s.prefill_sent - sent

    def stats(self, rtt_s: float | None) -> StatsUpdated:
        t, counts = self.t, self.t.counts
        up, down, trips, _ = self.traffic
        new = len(t.output)
        rounds = max(counts.verify_rounds, 1)
        per_token = max(new, 1)
        elapsed = time.perf_counter() - t.started
        return StatsUpdated(
            tau=(counts.accepted + counts.target) / rounds if counts.verify_rounds else 0.0,
            acceptance_rate=sum(counts.accepted_by_depth) / counts.drafted if counts.drafted else 0.0,
            acceptance_by_depth=tuple(
                a / n for a, n in zip(counts.accepted_by_depth, counts.tried_by_depth, strict=True)
            ),
            rtt_ms=None if rtt_s is None else rtt_s * 1e3,
            tokens_per_s=new / elapsed if elapsed > 0 else 0.0,
            round_trips=trips,
            round_trips_per_100=100.0 * trips / per_token,
            bytes_up_per_token=up / per_token,
            bytes_down_per_token=down / per_token,
            draft_ms=1e3 * self.draft_s / rounds,
            verify_ms=1e3 * self.verify_s / rounds,
            new_tokens=new,
            offline_tokens=counts.offline,
            drafted_share=counts.accepted / per_token,
        )

    def totals(self, rtt_s: float | None) -> GenerationStats:
        t, counts = self.t, self.t.counts
        up, down, trips, prefilled = self.traffic
        return GenerationStats(
            new_tokens=len(t.output),
            accepted=counts.accepted,
            target=counts.target,
            unverified=len(t.offline),
            offline_tokens=counts.offline,
            kept_after_repair=counts.kept,
            round_trips=trips,
            verify_rounds=counts.verify_rounds or self.forwards,
            bytes_up=up,
            bytes_down=down,
            wall_s=time.perf_counter() - t.started,
            ttft_s=None if t.first_token_at is None else t.first_token_at - t.started,
            longest_pause_s=t.longest_pause_s,
            mean_gamma=counts.drafted / max(counts.verify_rounds, 1),
            drafted_ahead=counts.drafted_ahead,
            rtt_ms=None if rtt_s is None else rtt_s * 1e3,
            prefill_tokens=prefilled,
            bytes_down_to_first_token=self.bytes_down_to_first if t.first_token_at is not None else down,
            requests=self.session.traffic.requests - self._requests,
            proposals=None if self.proposals is None else self.proposals.stats(),
            kept_after_resync=counts.resynced,
        )
