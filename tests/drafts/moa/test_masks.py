"""MoA's training masks, checked against verification points and masks written out by hand."""

from __future__ import annotations

import pytest
import torch

from drafts.moa.masks import (
    PERIOD_RANGE,
    cross_attention_mask,
    sample_periods,
    self_attention_mask,
    staircase_probability,
    verification_starts,
)

# Two sequences of 12 tokens: a 4-token prompt with period 3, a 2-token prompt with period 4.
LOSS_MASK = torch.tensor([[False] * 4 + [True] * 8, [False] * 2 + [True] * 10])
PERIODS = torch.tensor([3, 4])
# Verified: the prompt, then every period-th position: {0, 1, 2, 3, 6, 9} and {0, 1, 4, 8}.
STARTS = torch.tensor(
    [
        [0, 0, 1, 2, 3, 3, 3, 6, 6, 6, 9, 9],
        [0, 0, 1, 1, 1, 4, 4, 4, 4, 8, 8, 8],
    ]
)


def random_loss_masks(batch: int, length: int, seed: int) -> torch.Tensor:
    """(B, T) prompts of random length (at least one token) followed by responses."""
    generator = torch.Generator().manual_seed(seed)
    prompt_lengths = torch.randint(1, length // 2, (batch,), generator=generator)
    return torch.arange(length)[None] >= prompt_lengths[:, None]


def test_verification_starts_are_the_last_verified_position_strictly_before_each_token() -> None:
    assert torch.equal(verification_starts(LOSS_MASK, PERIODS), STARTS)


def test_every_prompt_position_is_verified() -> None:
    loss_mask = torch.zeros(1, 9, dtype=torch.bool)  # all prompt

    starts = verification_starts(loss_mask, torch.tensor([6]))

    assert starts[0].tolist() == [0, 0, 1, 2, 3, 4, 5, 6, 7]


def test_a_response_token_is_never_more_than_one_period_past_its_start() -> None:
    loss_mask = random_loss_masks(64, 60, seed=0)
    periods = sample_periods(64, torch.Generator().manual_seed(1))

    starts = verification_starts(loss_mask, periods)

    i = torch.arange(60).expand(64, 60)
    assert (starts[:, 1:] < i[:, 1:]).all()
    assert ((i - starts)[loss_mask] <= periods[:, None].expand(64, 60)[loss_mask]).all()
    assert ((i - starts)[loss_mask] == periods[:, None].expand(64, 60)[loss_mask]).any()  # the bound is reached


def test_the_cross_attention_mask_shows_query_i_the_target_state_up_to_its_start_only() -> None:
    mask = cross_attention_mask(STARTS)

    assert mask.shape == (2, 1, 12, 12)
    for b in range(2):
        for i in range(12):
            assert mask[b, 0, i].tolist() == [j <= STARTS[b, i] for j in range(12)]
    assert mask[0, 0, 8].nonzero().flatten().tolist() == [0, 1, 2, 3, 4, 5, 6]  # 2 tokens ahead of the state
    assert mask[1, 0, 8].nonzero().flatten().tolist() == [0, 1, 2, 3, 4]  # 4 ahead: the period


def test_the_cross_attention_mask_never_shows_a_token_its_own_or_later_target_state() -> None:
    starts = verification_starts(
        random_loss_masks(16, 40, seed=2), sample_periods(16, torch.Generator().manual_seed(3))
    )

    mask = cross_attention_mask(starts)[:, 0]  # (B, T, T)

    i = torch.arange(40)
    at_or_after = i[None, :] >= i[:, None]  # (T, T): key j >= query i
    # Position 0 is the one exception: it sees its own state, so its row is not empty (it is a
    # prompt position, never scored).
    assert not (mask[:, 1:] & at_or_after[1:]).any()
    assert mask[:, 0, 0].all()


def test_the_staircase_mask_shows_row_i_the_tokens_after_its_start_up_to_itself() -> None:
    mask = self_attention_mask(STARTS, torch.tensor([True, True]))

    assert mask.shape == (2, 1, 12, 12)
    for b in range(2):
        for i in range(12):
            expected = [STARTS[b, i] < j <= i or j == i for j in range(12)]
            assert mask[b, 0, i].tolist() == expected
    rows = {(0, 0): [0], (0, 1): [1], (0, 4): [4], (0, 6): [4, 5, 6], (0, 9): [7, 8, 9], (0, 11): [10, 11]}
    rows |= {(1, 4): [2, 3, 4], (1, 8): [5, 6, 7, 8], (1, 11): [9, 10, 11]}
    for (b, i), visible in rows.items():
        assert mask[b, 0, i].nonzero().flatten().tolist() == visible


def test_no_staircase_row_is_empty() -> None:
    starts = verification_starts(
        random_loss_masks(16, 40, seed=4), sample_periods(16, torch.Generator().manual_seed(5))
    )

    mask = self_attention_mask(starts, torch.ones(16, dtype=torch.bool))

    assert mask.any(dim=-1).all()
    assert mask[:, 0].diagonal(dim1=-2, dim2=-1).all()  # every token sees itself


def test_without_the_staircase_the_self_attention_mask_is_causal() -> None:
    mask = self_attention_mask(STARTS, torch.tensor([False, True]))

    causal = torch.ones(12, 12, dtype=torch.bool).tril()
    assert torch.equal(mask[0, 0], causal)
    assert not torch.equal(mask[1, 0], causal)  # the other sequence of the batch has its staircase


@pytest.mark.parametrize(("progress", "probability"), [(0.0, 1.0), (0.25, 0.5), (0.5, 0.0), (0.75, 0.0), (1.0, 0.0)])
def test_the_staircase_probability_anneals_from_one_to_zero_by_mid_training(
    progress: float, probability: float
) -> None:
    assert staircase_probability(progress) == pytest.approx(probability)


def test_periods_are_drawn_from_the_whole_range_and_repeat_with_the_seed() -> None:
    periods = sample_periods(2000, torch.Generator().manual_seed(6))

    low, high = PERIOD_RANGE
    assert set(periods.tolist()) == set(range(low, high + 1))
    assert torch.equal(periods, sample_periods(2000, torch.Generator().manual_seed(6)))


def test_with_depth0_a_verified_position_is_its_own_start_as_in_the_official_code() -> None:
    # The official code's cummax over verified indices: verified {0, 1, 2, 3, 6, 9} and {0, 1, 4, 8}.
    official = torch.tensor(
        [
            [0, 1, 2, 3, 3, 3, 6, 6, 6, 9, 9, 9],
            [0, 1, 1, 1, 4, 4, 4, 4, 8, 8, 8, 8],
        ]
    )

    assert torch.equal(verification_starts(LOSS_MASK, PERIODS, depth0=True), official)


def test_depth0_shifts_the_trained_depths_from_one_to_k_down_to_zero_to_k_minus_one() -> None:
    loss_mask = random_loss_masks(32, 60, seed=7)
    periods = sample_periods(32, torch.Generator().manual_seed(8))
    i = torch.arange(60).expand(32, 60)
    k = periods[:, None].expand(32, 60)[loss_mask]

    ours = (i - verification_starts(loss_mask, periods))[loss_mask]
    official = (i - verification_starts(loss_mask, periods, depth0=True))[loss_mask]

    assert ours.min() == 1 and (ours <= k).all()
    assert official.min() == 0 and (official < k).all()


def test_periods_come_from_the_range_given() -> None:
    periods = sample_periods(500, torch.Generator().manual_seed(9), period_range=(2, 5))

    assert set(periods.tolist()) == {2, 3, 4, 5}
