"""The reduced draft vocabulary: the most frequent response tokens, stop tokens always kept."""

from __future__ import annotations

import pytest
import torch

from drafts.training.tokenize import Sequence
from drafts.training.vocab import frequent_tokens


def sequence(prompt: list[int], response: list[int]) -> Sequence:
    return Sequence(torch.tensor(prompt + response), torch.tensor([False] * len(prompt) + [True] * len(response)))


# Response counts: 7 x5, 3 x4, 9 x3, 2 x2, 4 x1 (15 tokens); prompt tokens (1, 8) must not count.
SEQUENCES = [
    sequence([1, 1, 1, 8, 8, 8, 8, 8, 8], [7, 7, 7, 3, 3, 9, 2]),
    sequence([1, 8, 8], [7, 7, 3, 3, 9, 9, 2, 4]),
]


def test_the_most_frequent_response_tokens_are_kept_sorted_with_their_coverage() -> None:
    d2t, coverage = frequent_tokens(SEQUENCES, size=3, vocab_size=16)

    assert d2t.tolist() == [3, 7, 9]
    assert coverage == pytest.approx(12 / 15)


def test_forced_ids_are_kept_even_if_never_seen() -> None:
    d2t, coverage = frequent_tokens(SEQUENCES, size=3, vocab_size=16, always=[15])

    assert d2t.tolist() == [3, 7, 15]
    assert coverage == pytest.approx(9 / 15)


def test_a_vocabulary_at_least_the_targets_is_the_whole_vocabulary() -> None:
    d2t, coverage = frequent_tokens(SEQUENCES, size=16, vocab_size=16)

    assert torch.equal(d2t, torch.arange(16))
    assert coverage == 1.0
