"""How long a chain to send: the draft length that makes the most tokens per second over this link.

With per-token acceptance ``alpha`` (each drafted token accepted with that probability while the
ones before it were), a chain of ``gamma`` tokens yields on average (Leviathan et al. 2023, §3.1)

    E(gamma) = (1 - alpha**(gamma + 1)) / (1 - alpha)       tokens per round (the target's own included)

and costs ``gamma * c + R`` seconds, ``c`` one draft step and ``R`` the round trip (network and
verifier). The pacer picks the ``gamma`` maximising E / time, so a high-latency link gets long
chains (each round trip is expensive, drafted tokens are cheap) and a fast one short chains.
Tokens drafted ahead (while the previous chain was being verified) cost no time at all.
``alpha``, ``c`` and ``R`` are measured as the generation goes (exponentially weighted).
"""

from __future__ import annotations

from dataclasses import dataclass

DECAY = 0.8  # weight of the past in each running estimate: ~5 rounds of memory
PRIOR_WEIGHT = 2.0  # the acceptance prior counts as this many drafted tokens


@dataclass
class Pacer:
    gamma_min: int
    gamma_max: int
    alpha_prior: float
    step_s: float = 1e-3  # one draft step; 1 ms until measured
    round_s: float | None = None  # send -> reply of a Verify
    server_s: float = 0.0  # of that, the verifier's own time (queue + forward)

    def __post_init__(self) -> None:
        self._accepted = self.alpha_prior * PRIOR_WEIGHT
        self._drafted = PRIOR_WEIGHT

    @property
    def alpha(self) -> float:
        """Estimated probability that a drafted token is accepted, given the ones before it were."""
        return min(self._accepted / self._drafted, 0.99)

    @property
    def rtt_s(self) -> float | None:
        """The network's share of a round (what the link shaper sets), server time excluded."""
        return None if self.round_s is None else max(self.round_s - self.server_s, 0.0)

    def record_round(self, proposed: int, accepted: int, round_s: float, server_s: float) -> None:
        """A verified chain: ``accepted`` of ``proposed`` tokens; the round took ``round_s`` in all."""
        if proposed:
            # A token counts as tried if every token before it was accepted: the accepted ones,
            # plus the first rejected one.
            tried = accepted + (1 if accepted < proposed else 0)
            self._accepted = DECAY * self._accepted + accepted
            self._drafted = DECAY * self._drafted + tried
        if self.round_s is None:
            self.round_s, self.server_s = round_s, server_s
        else:
            self.round_s = DECAY * self.round_s + (1 - DECAY) * round_s
            self.server_s = DECAY * self.server_s + (1 - DECAY) * server_s

    def record_steps(self, steps: int, seconds: float) -> None:
        if steps > 0:
            self.step_s = DECAY * self.step_s + (1 - DECAY) * seconds / steps

    def gamma(self, cap: int | None = None, drafted: int = 0) -> int:
        """The chain length to send next, at most ``cap`` (the verifier's tree limit, the context left).

        ``drafted`` tokens of it are drafted already (ahead, while the last chain was verified):
        they cost no drafting time, so sending them at once may beat drafting more first.
        """
        hi = self.gamma_max if cap is None else max(1, min(self.gamma_max, cap))
        lo = min(self.gamma_min, hi)
        round_s = self.round_s if self.round_s is not None else 0.0

        def rate(g: int) -> float:
            return expected_tokens(self.alpha, g) / (max(g - drafted, 0) * self.step_s + round_s)

        return max(range(lo, hi + 1), key=rate)


def expected_tokens(alpha: float, gamma: int) -> float:
    """E(gamma): tokens a round yields on average, the target's own token included."""
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)
