"""Link profiles and the token bucket, without sockets."""

from __future__ import annotations

import random
from typing import Any

import pytest

from drafts.errors import ConfigError
from drafts.net.link import PRESETS, RTO_MIN_MS, Jitter, LinkProfile, TokenBucket, preset


@pytest.mark.parametrize(
    ("name", "rtt_ms", "bandwidth_bps"),
    [("lan", 1, None), ("wifi", 10, None), ("5g", 25, 50e6), ("4g", 60, 10e6), ("3g", 150, 1e6)],
)
def test_presets_have_the_documented_round_trip_and_bandwidth(
    name: str, rtt_ms: float, bandwidth_bps: float | None
) -> None:
    profile = preset(name)

    assert profile.name == name
    assert profile.rtt_ms == rtt_ms
    assert profile.bandwidth_bps == bandwidth_bps
    assert not profile.offline


def test_4g_has_jitter_3g_has_loss_and_offline_is_offline() -> None:
    assert PRESETS["4g"].jitter_ms > 0
    assert PRESETS["3g"].loss > 0
    assert PRESETS["offline"].offline
    assert list(PRESETS) == ["lan", "wifi", "5g", "4g", "3g", "offline"]


def test_an_unknown_preset_name_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match="lan, wifi, 5g, 4g, 3g, offline"):
        preset("dialup")


def test_preset_names_ignore_case_and_spaces() -> None:
    assert preset(" 4G\n") is PRESETS["4g"]


@pytest.mark.parametrize(
    "kwargs",
    [{"latency_ms": -1}, {"jitter_ms": -0.5}, {"bandwidth_bps": 0}, {"loss": 1.0}, {"loss": -0.1}],
)
def test_invalid_numbers_are_refused_at_construction(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="link profile 'bad'"):
        LinkProfile("bad", **kwargs)


def test_uniform_jitter_stays_within_latency_plus_or_minus_jitter() -> None:
    profile = LinkProfile("j", latency_ms=30, jitter_ms=10, jitter=Jitter.UNIFORM)
    rng = random.Random(0)

    delays = [profile.delay_s(rng) for _ in range(2000)]

    assert all(0.020 <= d <= 0.040 for d in delays)
    assert max(delays) - min(delays) > 0.015  # it does vary


def test_normal_jitter_never_gives_a_negative_delay() -> None:
    profile = LinkProfile("j", latency_ms=1, jitter_ms=20, jitter=Jitter.NORMAL)
    rng = random.Random(1)

    assert min(profile.delay_s(rng) for _ in range(2000)) == 0.0


def test_the_same_seed_draws_the_same_delays() -> None:
    profile = PRESETS["4g"]

    a = [profile.delay_s(random.Random(7)) for _ in range(5)]
    b = [profile.delay_s(random.Random(7)) for _ in range(5)]

    assert a == b


def test_a_lost_chunk_is_late_by_one_retransmission_timeout_not_dropped() -> None:
    profile = LinkProfile("lossy", latency_ms=10, loss=0.5)
    rng = random.Random(3)

    delays = {round(profile.delay_s(rng), 6) for _ in range(200)}

    assert delays == {0.010, round(0.010 + RTO_MIN_MS / 1000, 6)}


def test_the_retransmission_timeout_is_at_least_one_round_trip() -> None:
    assert LinkProfile("far", latency_ms=300).retransmit_s == 0.6
    assert LinkProfile("near", latency_ms=5).retransmit_s == RTO_MIN_MS / 1000


def test_describe_names_every_effect() -> None:
    assert PRESETS["4g"].describe() == "4g (60 ms RTT, ±10 ms uniform jitter, 10 Mbit/s)"
    assert PRESETS["3g"].describe() == "3g (150 ms RTT, 1 Mbit/s, 2% retransmitted)"
    assert PRESETS["lan"].describe() == "lan (1 ms RTT, unlimited bandwidth)"
    assert PRESETS["offline"].describe() == "offline (offline)"


def test_the_token_bucket_serialises_at_the_link_rate() -> None:
    bucket = TokenBucket(burst_bytes=0)

    first = bucket.reserve(125_000, now=10.0, bandwidth_bps=1e6)  # 1 Mbit takes 1 s
    second = bucket.reserve(125_000, now=10.0, bandwidth_bps=1e6)  # queued behind the first

    assert first == pytest.approx(11.0)
    assert second == pytest.approx(12.0)


def test_the_token_bucket_lets_a_burst_through_and_refills_while_idle() -> None:
    bucket = TokenBucket(burst_bytes=1000)

    assert bucket.reserve(1000, now=5.0, bandwidth_bps=8000) == 5.0  # within the burst: no wait
    assert bucket.reserve(1000, now=5.0, bandwidth_bps=8000) == pytest.approx(6.0)  # 1000 B at 1000 B/s
    assert bucket.reserve(1000, now=8.0, bandwidth_bps=8000) == 8.0  # idle long enough to refill


def test_an_unlimited_link_sends_at_once() -> None:
    bucket = TokenBucket(burst_bytes=0)

    assert bucket.reserve(10**9, now=3.0, bandwidth_bps=None) == 3.0


def test_a_slower_rate_does_not_stretch_a_debt_already_repaid_at_the_faster_one() -> None:
    bucket = TokenBucket(burst_bytes=0)
    bucket.reserve(125_000, now=0.0, bandwidth_bps=10e6)  # 0.1 s of debt at 10 Mbit/s

    assert bucket.reserve(100, now=0.5, bandwidth_bps=1e6) == pytest.approx(0.5008)  # only its own 100 B
