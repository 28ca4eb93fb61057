from __future__ import annotations

import pytest

from drafts.bench.stats import MethodStats
from drafts.decoding.events import RoundEvent
from drafts.decoding.generation import Generation


def event(accepted: tuple[int, ...], rejected: tuple[int, ...], next_token: int, proposed: int) -> RoundEvent:
    depths = tuple(range(1, len(accepted) + 1))
    return RoundEvent(
        0, accepted, next_token, rejected, depths, proposed, 0.010, 0.020, (*accepted, next_token)
    )


def generation(*rounds: RoundEvent, wall_s: float) -> Generation:
    gen = Generation(prompt_len=5, wall_s=wall_s)
    for r in rounds:
        gen.add(r)
    return gen


PREFILL = event((), (), 1, proposed=0)
# Two prompts, chains of 4. Rounds after the prefill: 2 accepted, 0 accepted, 4 accepted.
FIRST = generation(PREFILL, event((4, 5), (6, 7), 8, 4), event((), (8, 9, 10, 11), 12, 4), wall_s=0.5)
SECOND = generation(PREFILL, event((1, 2, 3, 4), (), 5, 4), wall_s=0.25)


@pytest.fixture
def stats() -> MethodStats:
    s = MethodStats("lookup")
    s.add(FIRST, FIRST.tokens)
    s.add(SECOND, [0])
    return s


def test_counts_add_up_over_prompts(stats: MethodStats) -> None:
    assert stats.new_tokens == 5 + 6
    assert stats.target_forwards == 3 + 2
    assert stats.draft_rounds == 3
    assert (stats.proposed, stats.accepted) == (12, 6)


def test_tau_is_tokens_per_target_forward_after_the_prefill(stats: MethodStats) -> None:
    assert stats.tau == pytest.approx((3 + 1 + 5) / 3)


def test_json_reports_rates_and_per_round_times_by_hand(stats: MethodStats) -> None:
    ar = MethodStats("ar", new_tokens=11, wall_s=1.5)

    report = stats.to_json(ar)

    assert report["tau"] == pytest.approx(3.0)
    assert report["accept_rate"] == pytest.approx(6 / 12)
    assert report["tokens_per_s"] == pytest.approx(11 / 0.75)
    assert report["speedup"] == pytest.approx(2.0)
    assert report["draft_ms_per_round"] == pytest.approx(10.0)
    assert report["verify_ms_per_round"] == pytest.approx(20.0)
    assert report["identical_to_ar"] is False  # the second prompt differs from its reference
    assert (report["target_forwards"], report["new_tokens"], report["wall_s"]) == (5, 11, 0.75)


def test_per_position_acceptance_divides_rounds_accepting_by_rounds_proposing_each_depth(
    stats: MethodStats,
) -> None:
    # every round drafted 4 deep; depth 1 and 2 accepted in 2 of 3 rounds, depth 3 and 4 in 1
    assert stats.to_json(None)["per_position_acceptance"] == pytest.approx(
        {"1": 2 / 3, "2": 2 / 3, "3": 1 / 3, "4": 1 / 3}
    )


def test_without_drafting_rounds_the_rates_are_empty() -> None:
    ar = MethodStats("ar")
    ar.add(generation(PREFILL, event((), (), 2, 0), wall_s=0.1), None)

    report = ar.to_json(ar)

    assert report["tau"] == 1.0
    assert report["accept_rate"] is None
    assert report["per_position_acceptance"] == {}
    assert report["speedup"] == pytest.approx(1.0)
    assert report["identical_to_ar"] is None


def test_a_method_with_no_time_reports_no_speed() -> None:
    report = MethodStats("x").to_json(MethodStats("ar"))

    assert report["tokens_per_s"] == 0.0
    assert report["speedup"] is None
    assert report["draft_ms_per_round"] is None


def test_plain_runs_count_tokens_forwards_and_identity() -> None:
    s = MethodStats("generate")

    s.add_plain([1, 2, 3], 0.3, 3, [1, 2, 3])
    s.add_plain([4], 0.1, 1, [4])

    assert (s.new_tokens, s.target_forwards, s.draft_rounds) == (4, 4, 0)
    assert s.to_json(None)["identical_to_ar"] is True


def test_json_keeps_each_prompts_counts_for_paired_comparisons(stats: MethodStats) -> None:
    per_prompt = stats.to_json(None)["per_prompt"]

    assert per_prompt == [
        {"new_tokens": 5, "rounds": 2, "round_tokens": 3 + 1, "proposed": 8, "accepted": 2},
        {"new_tokens": 6, "rounds": 1, "round_tokens": 5, "proposed": 4, "accepted": 4},
    ]
    # the prompts' counts add up to the method's
    assert sum(p["round_tokens"] for p in per_prompt) / sum(p["rounds"] for p in per_prompt) == stats.tau
