from __future__ import annotations

import math

import pytest
import torch

from drafts.errors import ConfigError
from drafts.sampling import SamplingConfig, choose, logits_to_probs, sample

# A hand-checkable distribution, deliberately not sorted: p = [0.10, 0.50, 0.15, 0.25].
HAND_PROBS = torch.tensor([0.10, 0.50, 0.15, 0.25])
HAND_LOGITS = HAND_PROBS.log()


def test_greedy_gives_the_one_hot_distribution_of_the_argmax() -> None:
    logits = torch.tensor([[0.1, 2.0, -1.0, 1.9], [3.0, 0.0, 0.0, 0.0]])

    probs = logits_to_probs(logits, SamplingConfig(temperature=0.0))

    assert torch.equal(probs, torch.tensor([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]))


def test_greedy_choose_returns_the_argmax() -> None:
    assert choose(torch.tensor([0.3, -2.0, 4.5, 4.4]), SamplingConfig(), None) == 2


def test_the_default_config_is_greedy() -> None:
    assert SamplingConfig().greedy
    assert not SamplingConfig(temperature=0.5).greedy


def test_temperature_divides_the_logits_before_the_softmax() -> None:
    logits = torch.tensor([1.0, 2.0, 0.5, -1.0])

    probs = logits_to_probs(logits, SamplingConfig(temperature=0.5))

    torch.testing.assert_close(probs, torch.softmax(logits / 0.5, dim=-1))


def test_temperature_one_is_the_plain_softmax() -> None:
    logits = torch.tensor([1.0, 2.0, 0.5, -1.0])

    torch.testing.assert_close(logits_to_probs(logits, SamplingConfig(temperature=1.0)), torch.softmax(logits, -1))


@pytest.mark.parametrize("k", [1, 2, 5, 7])
def test_top_k_keeps_exactly_the_k_most_likely_tokens(k: int) -> None:
    logits = torch.randn(8, generator=torch.Generator().manual_seed(3))

    probs = logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=k))

    kept = set(torch.nonzero(probs).flatten().tolist())
    assert kept == set(torch.topk(logits, k).indices.tolist())
    expected = torch.softmax(logits.masked_fill(probs == 0, float("-inf")), dim=-1)
    torch.testing.assert_close(probs, expected)


def test_top_k_at_least_the_vocabulary_changes_nothing() -> None:
    logits = torch.tensor([1.0, 2.0, 0.5])

    probs = logits_to_probs(logits, SamplingConfig(temperature=1.0, top_k=3))

    torch.testing.assert_close(probs, torch.softmax(logits, -1))


@pytest.mark.parametrize(
    ("top_p", "expected"),
    [
        (0.45, [0.0, 1.0, 0.0, 0.0]),  # 0.50 alone reaches 0.45
        (0.70, [0.0, 0.50 / 0.75, 0.0, 0.25 / 0.75]),  # 0.50 + 0.25 = 0.75 reaches 0.70
        (0.80, [0.0, 0.50 / 0.90, 0.15 / 0.90, 0.25 / 0.90]),  # 0.75 falls short; 0.90 reaches it
        (0.95, [0.10, 0.50, 0.15, 0.25]),  # only the whole vocabulary reaches 0.95
    ],
)
def test_top_p_keeps_the_smallest_set_that_reaches_p(top_p: float, expected: list[float]) -> None:
    probs = logits_to_probs(HAND_LOGITS, SamplingConfig(temperature=1.0, top_p=top_p))

    torch.testing.assert_close(probs, torch.tensor(expected))


def test_top_p_applies_to_the_distribution_left_by_top_k() -> None:
    # top-3 renormalises [0.50, 0.25, 0.15] to [0.556, 0.278, 0.167]: 0.556 + 0.278 reaches 0.8.
    probs = logits_to_probs(HAND_LOGITS, SamplingConfig(temperature=1.0, top_k=3, top_p=0.8))

    torch.testing.assert_close(probs, torch.tensor([0.0, 2 / 3, 0.0, 1 / 3]))


def test_transforms_apply_to_every_row_of_a_batch() -> None:
    logits = torch.randn(2, 3, 10, generator=torch.Generator().manual_seed(0))
    cfg = SamplingConfig(temperature=0.7, top_k=4, top_p=0.9)

    probs = logits_to_probs(logits, cfg)

    assert probs.shape == (2, 3, 10)
    for i in range(2):
        for j in range(3):
            torch.testing.assert_close(probs[i, j], logits_to_probs(logits[i, j], cfg))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temperature": -0.1}, r"temperature must be 0 \(greedy\) or in \[0.001, 1000\]"),
        ({"top_k": -1}, "top_k must be an int >= 0"),
        ({"top_p": 0.0}, r"top_p must be in \[1e-06, 1\]"),
        ({"top_p": 1.5}, r"top_p must be in \[1e-06, 1\]"),
        # values that pass a plain range check but underflow or overflow in float32 (issue 13)
        ({"temperature": 1e-300}, "use 0"),
        ({"temperature": 1e-45}, "use 0"),
        ({"temperature": float("inf")}, "temperature must be"),
        ({"temperature": float("nan")}, "temperature must be"),
        ({"top_p": 5e-324}, "top_p must be"),
        ({"seed": -1}, "seed must be"),
    ],
)
def test_invalid_options_raise_a_config_error_that_says_how_to_fix_them(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SamplingConfig(**options)


def test_sample_draws_one_token_per_row() -> None:
    probs = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])

    assert sample(probs).tolist() == [1, 2, 0]


def test_samples_never_leave_the_top_k() -> None:
    logits = torch.randn(16, generator=torch.Generator().manual_seed(1))
    cfg = SamplingConfig(temperature=2.0, top_k=3, seed=0)
    generator = cfg.generator()

    drawn = {choose(logits, cfg, generator) for _ in range(300)}

    assert drawn == set(torch.topk(logits, 3).indices.tolist())


def test_a_seeded_generator_reproduces_its_samples() -> None:
    logits = torch.zeros(1000)  # uniform: any difference in the random stream shows
    cfg = SamplingConfig(temperature=1.0, seed=1234)

    first, second = cfg.generator(), cfg.generator()
    run_a = [choose(logits, cfg, first) for _ in range(20)]
    run_b = [choose(logits, cfg, second) for _ in range(20)]
    other = SamplingConfig(temperature=1.0, seed=4321).generator()
    run_c = [choose(logits, cfg, other) for _ in range(20)]

    assert run_a == run_b
    assert run_a != run_c


def test_sample_frequencies_follow_the_probabilities() -> None:
    probs = HAND_PROBS.expand(20_000, 4)

    counts = torch.bincount(sample(probs, torch.Generator().manual_seed(0)), minlength=4).double()

    # binomial standard deviation of each count is at most sqrt(20000 * 0.25) ~ 71; allow 5 sigma
    assert torch.all((counts - 20_000 * HAND_PROBS.double()).abs() < 5 * math.sqrt(20_000 * 0.25))


@pytest.mark.parametrize("options", [{"temperature": 1e-3}, {"temperature": 1e3}, {"top_p": 1e-6}])
def test_the_extreme_settings_allowed_give_finite_probabilities(options: dict) -> None:
    logits = torch.randn(3, 49152, generator=torch.Generator().manual_seed(0)) * 30  # (rows, V) sharp logits
    cfg = SamplingConfig(**{"temperature": 1.0, **options})

    probs = logits_to_probs(logits, cfg)

    assert bool(torch.isfinite(probs).all()) and torch.allclose(probs.sum(-1), torch.ones(3))
    assert sample(probs, cfg.generator()).shape == (3,)
