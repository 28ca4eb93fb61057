"""Link profiles: what a network path does to the bytes of one TCP connection, as plain values.

A profile is read per direction (client → server is "up", server → client is "down"); each
direction has its own clock, so a profile's one-way numbers apply to each.

- **latency** is the one-way delay of a chunk; the round trip is twice that.
- **jitter** moves each chunk's delay by a random amount (uniform in ±jitter, or normal with
  standard deviation jitter), drawn from a seeded RNG. TCP never reorders bytes, so a chunk
  that draws a short delay still waits for the one before it: delays only ever grow.
- **bandwidth** serialises chunks through a token bucket (:class:`TokenBucket`): a chunk
  leaves when the link has carried everything before it, then travels for the latency.
- **loss** is the probability that a chunk is *retransmitted*. TCP is reliable, so a lost
  segment costs time, not bytes: the chunk (and, head of line, everything after it) arrives
  one retransmission timeout late. Linux's minimum RTO is 200 ms; a path slower than that
  waits one round trip instead (:attr:`LinkProfile.retransmit_s`).
- **offline** cuts every open connection and refuses new ones.

Everything here is pure (an RNG and times in, times out), so it is tested without sockets;
:mod:`drafts.net.shaper` applies it to real connections.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from drafts.errors import ConfigError

RTO_MIN_MS = 200.0  # Linux TCP_RTO_MIN: the soonest a lost segment is sent again without fast retransmit


class Jitter(enum.Enum):
    """How a chunk's delay varies around the profile's latency."""

    UNIFORM = "uniform"  # uniform in [latency - jitter, latency + jitter]
    NORMAL = "normal"  # normal with mean latency and standard deviation jitter


@dataclass(frozen=True)
class LinkProfile:
    """One network condition. Times in milliseconds, one way; bandwidth in bits per second."""

    name: str  # what the CLI and the demo call it
    latency_ms: float = 0.0  # one-way delay of every chunk; RTT = 2 x latency_ms
    jitter_ms: float = 0.0  # spread of the delay around latency_ms (see jitter)
    jitter: Jitter = Jitter.UNIFORM  # shape of that spread
    bandwidth_bps: float | None = None  # bits per second per direction; None = as fast as loopback goes
    loss: float = 0.0  # probability that a chunk is retransmitted (delayed by retransmit_s, never dropped)
    offline: bool = False  # no route: open connections are cut, new ones refused

    def __post_init__(self) -> None:
        if not self.name:
            raise ConfigError("a link profile needs a name, e.g. LinkProfile('slow-wifi', latency_ms=20)")
        for field in ("latency_ms", "jitter_ms"):
            if getattr(self, field) < 0:
                raise ConfigError(f"link profile {self.name!r}: {field} must be >= 0, got {getattr(self, field)}")
        if self.bandwidth_bps is not None and self.bandwidth_bps <= 0:
            raise ConfigError(
                f"link profile {self.name!r}: bandwidth_bps must be > 0 (or None for unlimited), "
                f"got {self.bandwidth_bps}"
            )
        if not 0.0 <= self.loss < 1.0:
            raise ConfigError(f"link profile {self.name!r}: loss is a probability in [0, 1), got {self.loss}")

    @property
    def rtt_ms(self) -> float:
        """The round trip without jitter or loss."""
        return 2.0 * self.latency_ms

    @property
    def retransmit_s(self) -> float:
        """What one lost chunk costs: an RTO, which is at least 200 ms and at least one round trip."""
        return max(RTO_MIN_MS, self.rtt_ms) / 1000.0

    def delay_s(self, rng: random.Random) -> float:
        """Draw the one-way delay of one chunk: latency, plus jitter, plus a retransmission if it is lost."""
        delay = self.latency_ms
        if self.jitter_ms > 0:
            if self.jitter is Jitter.UNIFORM:
                delay += rng.uniform(-self.jitter_ms, self.jitter_ms)
            else:
                delay += rng.gauss(0.0, self.jitter_ms)
        delay = max(0.0, delay) / 1000.0
        if self.loss > 0 and rng.random() < self.loss:
            delay += self.retransmit_s
        return delay

    def describe(self) -> str:
        """One line for people: ``4g (60 ms RTT, ±10 ms uniform jitter, 10 Mbit/s)``."""
        if self.offline:
            return f"{self.name} (offline)"
        parts = [f"{self.rtt_ms:g} ms RTT"]
        if self.jitter_ms:
            parts.append(f"±{self.jitter_ms:g} ms {self.jitter.value} jitter")
        parts.append(f"{self.bandwidth_bps / 1e6:g} Mbit/s" if self.bandwidth_bps else "unlimited bandwidth")
        if self.loss:
            parts.append(f"{self.loss:.0%} retransmitted")
        return f"{self.name} ({', '.join(parts)})"


class TokenBucket:
    """Serialises bytes onto a link of a given rate, allowing a small burst.

    The bucket holds up to ``burst_bytes`` of credit and refills at the link rate. Sending more
    than the credit puts the bucket in debt, which later chunks wait out: a chunk therefore
    leaves only once everything before it has been carried. Callers pass the rate on each call,
    so a profile switch takes effect at the next chunk; the time before that call refills at the
    rate that applied then.
    """

    def __init__(self, burst_bytes: int) -> None:
        self.burst_bytes = burst_bytes
        self._tokens = float(burst_bytes)  # bytes of credit; negative is debt
        self._updated = 0.0  # time the credit was last brought up to date
        self._rate: float | None = None  # bytes per second since then; None = unlimited

    def reserve(self, nbytes: int, now: float, bandwidth_bps: float | None) -> float:
        """Take ``nbytes`` at time ``now``; return when their last bit is on the wire."""
        self._refill(now)
        if bandwidth_bps is None:
            self._rate = None
            return now
        self._rate = bandwidth_bps / 8.0
        self._tokens -= nbytes
        return max(now, self._updated) + max(0.0, -self._tokens) / self._rate  # in debt: once it is repaid

    def _refill(self, now: float) -> None:
        if self._rate is None:
            self._tokens = float(self.burst_bytes)
        elif now > self._updated:
            self._tokens = min(float(self.burst_bytes), self._tokens + (now - self._updated) * self._rate)
        self._updated = max(self._updated, now)


# The presets. Numbers are typical medians for a phone or laptop talking to a server in the
# same region; each direction gets the same rate (uplinks are often slower, but what a
# speculative-decoding client sends, token ids and drafts, is small).
PRESETS: Mapping[str, LinkProfile] = MappingProxyType(
    {
        # Wired Ethernet across a switch or two: 1 ms RTT; gigabit, so no limit is worth simulating.
        "lan": LinkProfile("lan", latency_ms=0.5),
        # Home Wi-Fi to a server nearby: 10 ms RTT; Wi-Fi 5/6 rates are far above what we send.
        "wifi": LinkProfile("wifi", latency_ms=5.0),
        # 5G (non-standalone) to an internet server: 25 ms RTT, 50 Mbit/s, a modest median.
        "5g": LinkProfile("5g", latency_ms=12.5, bandwidth_bps=50e6),
        # LTE: 60 ms RTT, 10 Mbit/s; radio scheduling and HARQ retries move each
        # packet's one-way delay by up to ±10 ms.
        "4g": LinkProfile("4g", latency_ms=30.0, jitter_ms=10.0, jitter=Jitter.UNIFORM, bandwidth_bps=10e6),
        # HSPA 3G: 150 ms RTT, 1 Mbit/s, and 2 % of chunks lost and resent after an RTO (200 ms).
        "3g": LinkProfile("3g", latency_ms=75.0, bandwidth_bps=1e6, loss=0.02),
        # No route: the train went into a tunnel.
        "offline": LinkProfile("offline", offline=True),
    }
)


def preset(name: str) -> LinkProfile:
    """The preset called ``name``; an unknown name raises a ConfigError listing the choices."""
    try:
        return PRESETS[name.strip().lower()]
    except KeyError:
        raise ConfigError(f"unknown link profile {name!r}; choose one of: {', '.join(PRESETS)}") from None
