"""How many of the server's tokens a stream's proposal must guess: the lag its fan leads by.

In a speculative stream the server steps without waiting (:mod:`app.engine.stream_generation`).
It sends a part, whose newest token r sits at index b, and at once starts its next step; a
proposal drafted below r reaches it when the part has come here (half a round trip), the draft
has drafted, and the proposal has gone back (the other half). The server's steps start every S
seconds, each a token when no proposal applies, so the first step that can use the proposal has
its root at index b + L, with::

    L = ceil((rtt + delay) / S), at least 1       delay: the part's arrival -> the proposal sent

and the proposal applies only if it spelled the L tokens at b + 1 .. b + L (:mod:`drafts.proposal_match`).
On lan L is 1 (rtt ~1 ms, the draft well inside a step); on 4g with a verifier of its own (s11
split run: S ~60 ms, rtt 60 ms, delay 30-50 ms) it is 2 (s12 stream-lead/README.md). The fan
leads by L (:func:`drafts.neural.fan.fan_tree`: the likeliest paths of L tokens, a chain below each).

The step and the delay are running averages (as the pacer's), the round trip the least seen; until
all three are known the lag is 1, as a stream assumed before. Used where ``EngineConfig.stream_lag``
is 0; N > 0 fixes it (the default, 1: leading did not pay on tokens/s, s12 stream-lead/README.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DECAY = 0.8  # weight of the past in each running estimate (as app.engine.pacing's)
MAX_LAG = 3  # a deeper lead's paths are too unlikely to be worth the draft's time


@dataclass
class LagEstimate:
    fixed: int = 0  # EngineConfig.stream_lag: 0 measures the lag, N > 0 assumes it
    step_s: float | None = None  # the server's step, part to part as seen here
    delay_s: float | None = None  # a part's arrival here -> the proposal drafted below it sent
    rtt_s: float | None = None  # the link's round trip, server time excluded: the least seen

    @property
    def lag(self) -> int:
        """Tokens the server will have made after a proposal's root when the proposal can first apply."""
        if self.fixed:
            return self.fixed
        if self.step_s is None or self.delay_s is None or self.rtt_s is None or self.step_s <= 0:
            return 1
        return max(1, min(MAX_LAG, math.ceil((self.rtt_s + self.delay_s) / self.step_s)))

    def stepped(self, seconds: float) -> None:
        """A part came ``seconds`` after the one before (one server step)."""
        self.step_s = _averaged(self.step_s, seconds)

    def proposed(self, seconds: float) -> None:
        """A proposal went out ``seconds`` after the part it was drafted below had come."""
        self.delay_s = _averaged(self.delay_s, seconds)

    def round_trip(self, seconds: float | None) -> None:
        """The link's round trip as last measured (None or 0: not known yet). The least one seen is
        kept: a keepalive's pong waits for a busy event loop at either end (the draft, a step's
        reply), which adds to it; the link's own round trip does not shrink."""
        if seconds:
            self.rtt_s = seconds if self.rtt_s is None else min(self.rtt_s, seconds)


def _averaged(old: float | None, new: float) -> float:
    return new if old is None else DECAY * old + (1 - DECAY) * new
