"""The lag a stream's proposals lead by: (round trip + the part -> proposal delay) / the server's step, rounded up."""

from __future__ import annotations

from app.engine.lag import MAX_LAG, LagEstimate


def measured(step_s: float, delay_s: float, rtt_s: float) -> LagEstimate:
    lag = LagEstimate()
    lag.stepped(step_s)
    lag.proposed(delay_s)
    lag.round_trip(rtt_s)
    return lag


def test_a_proposal_that_comes_back_within_a_step_is_one_step_late() -> None:
    assert measured(step_s=0.060, delay_s=0.040, rtt_s=0.001).lag == 1  # lan


def test_a_proposal_that_takes_longer_than_a_step_to_come_back_is_two_steps_late() -> None:
    assert measured(step_s=0.060, delay_s=0.040, rtt_s=0.060).lag == 2  # 4g, the verifier on a core of its own


def test_until_every_figure_is_known_the_lag_is_one_and_a_fixed_lag_wins() -> None:
    lag = LagEstimate()
    lag.stepped(0.060)
    lag.round_trip(None)  # no round trip measured yet
    lag.proposed(0.500)
    assert lag.lag == 1
    assert LagEstimate(fixed=2).lag == 2


def test_a_very_slow_link_leads_by_at_most_the_cap() -> None:
    assert measured(step_s=0.010, delay_s=0.040, rtt_s=0.600).lag == MAX_LAG


def test_the_step_is_a_running_average_and_the_round_trip_the_least_seen() -> None:
    lag = measured(step_s=0.100, delay_s=0.0, rtt_s=0.050)
    lag.stepped(0.200)
    lag.round_trip(0.090)  # a pong that waited for a busy loop
    lag.round_trip(0.040)
    assert lag.step_s is not None and abs(lag.step_s - 0.120) < 1e-9 and lag.rtt_s == 0.040
