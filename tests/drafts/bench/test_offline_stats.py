from __future__ import annotations

import pytest

from drafts.bench.offline_stats import KeptCounts, kept_tokens


def test_the_repair_keeps_the_offline_text_up_to_its_first_difference() -> None:
    assert kept_tokens([5, 6, 7, 8], [5, 6, 9, 8]) == 2
    assert kept_tokens([1, 2, 3], [1, 2, 3]) == 3
    assert kept_tokens([4, 2, 3], [1, 2, 3]) == 0


def counts_of(kept: list[int], horizon: int = 4) -> KeptCounts:
    """KeptCounts whose samples keep exactly ``kept`` tokens (a difference right after, if any)."""
    counts = KeptCounts(horizon)
    target = list(range(horizon))
    for k in kept:
        counts.add(target[:k] + [-1] * (horizon - k), target)
    return counts


def test_a_shorter_horizon_counts_at_most_its_own_length() -> None:
    counts = counts_of([0, 1, 4, 4])

    assert counts.mean_kept(4) == pytest.approx(9 / 4)
    assert counts.mean_kept(2) == pytest.approx((0 + 1 + 2 + 2) / 4)
    assert counts.mean_kept(1) == pytest.approx(3 / 4)


def test_survival_and_conditional_acceptance_by_offline_depth() -> None:
    counts = counts_of([0, 1, 2, 4])

    assert counts.survival() == [0.75, 0.5, 0.25, 0.25]
    assert counts.conditional() == pytest.approx([0.75, 2 / 3, 0.5, 1.0])
    assert counts.distribution() == [1, 1, 1, 0, 1]


def test_depths_no_sample_reached_have_no_conditional_acceptance() -> None:
    assert counts_of([0, 0]).conditional() == [0.0, None, None, None]


def test_the_summary_reports_every_horizon_as_tokens_and_as_a_share() -> None:
    summary = counts_of([2, 4]).summary((2, 4))

    assert summary["samples"] == 2
    assert summary["kept"] == {"2": 2.0, "4": 3.0}
    assert summary["fraction"] == {"2": 1.0, "4": 0.75}
    assert summary["kept_sem"]["2"] == 0.0
    assert summary["token_accuracy"] == pytest.approx((2 + 4) / 8)


def test_token_accuracy_counts_matches_after_the_first_difference_too() -> None:
    counts = KeptCounts(4)
    counts.add([0, 9, 2, 3], [0, 1, 2, 3])

    assert counts.counts == [1]
    assert counts.summary((4,))["token_accuracy"] == 0.75
    assert counts.summary((4,))["token_accuracy_by_depth"] == [1.0, 0.0, 1.0, 1.0]


def test_a_continuation_shorter_than_the_horizon_is_refused() -> None:
    with pytest.raises(ValueError, match="expected 4 tokens"):
        KeptCounts(4).add([1, 2], [1, 2, 3, 4])
