"""The pacer: longer chains when round trips are expensive, shorter when the draft is often wrong."""

from __future__ import annotations

from app.engine.pacing import Pacer, expected_tokens


def measured(alpha: float, round_s: float, step_s: float = 1e-3) -> Pacer:
    pacer = Pacer(gamma_min=1, gamma_max=16, alpha_prior=alpha, step_s=step_s)
    pacer.record_round(proposed=0, accepted=0, round_s=round_s, server_s=0.0)
    return pacer


def test_expected_tokens_follow_the_closed_form() -> None:
    assert expected_tokens(0.5, 0) == 1.0
    assert expected_tokens(0.5, 2) == 1 + 0.5 + 0.25


def test_a_slower_link_gets_longer_chains() -> None:
    lan, wifi, mobile = measured(0.8, 0.002), measured(0.8, 0.02), measured(0.8, 0.15)

    assert lan.gamma() < wifi.gamma() < mobile.gamma()
    assert mobile.gamma() >= 12


def test_a_draft_that_is_often_wrong_gets_shorter_chains() -> None:
    assert measured(0.3, 0.02).gamma() < measured(0.9, 0.02).gamma()


def test_acceptance_is_learned_from_rounds() -> None:
    pacer = Pacer(gamma_min=1, gamma_max=16, alpha_prior=0.6)
    for _ in range(20):
        pacer.record_round(proposed=8, accepted=0, round_s=0.02, server_s=0.005)

    assert pacer.alpha < 0.1
    assert pacer.rtt_s is not None and abs(pacer.rtt_s - 0.015) < 1e-9


def test_the_chain_never_exceeds_the_cap() -> None:
    assert measured(0.9, 0.5).gamma(cap=3) == 3


def test_tokens_drafted_ahead_are_sent_rather_than_waited_for_when_drafting_is_slow() -> None:
    slow_draft = measured(0.7, round_s=0.01, step_s=0.01)

    assert slow_draft.gamma(drafted=3) == 3 or slow_draft.gamma(drafted=3) <= slow_draft.gamma(drafted=0) + 3
    assert slow_draft.gamma(drafted=0) < slow_draft.gamma(drafted=6)
