"""Cutting a draft vocabulary down to its most frequent rows, and what it covers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

from drafts.errors import ConfigError
from drafts.neural.vocab_prune import answer_texts, coverage, prune, rank_rows, token_counts
from tests.tiny_targets import FakeTokenizer


def test_rows_rank_stop_tokens_first_then_by_counts_then_by_the_tie_breaker() -> None:
    d2t = torch.tensor([2, 5, 7, 9, 11])
    primary = torch.zeros(12, dtype=torch.long)
    secondary = torch.zeros(12, dtype=torch.long)
    primary[[5, 9]] = 3  # a tie between 5 and 9 ...
    secondary[9] = 1  # ... that 9 wins
    primary[7] = 1

    order = d2t[rank_rows(d2t, primary, secondary, always=[11])].tolist()

    assert order == [11, 9, 5, 7, 2]


def test_pruning_keeps_the_top_rows_in_ascending_target_order() -> None:
    d2t = torch.tensor([2, 5, 7, 9, 11])
    ranking = torch.tensor([4, 3, 1, 2, 0])  # draft ids, best first

    assert prune(d2t, ranking, 3).tolist() == [5, 9, 11]
    with pytest.raises(ConfigError, match="1 to the draft's own 5"):
        prune(d2t, ranking, 6)


def test_coverage_is_the_share_of_tokens_inside_the_vocabulary() -> None:
    assert coverage(torch.tensor([1, 2]), [1, 2, 3, 1]) == 0.75
    with pytest.raises(ConfigError):
        coverage(torch.tensor([1]), [])


def test_answers_are_read_and_counted_from_a_gzipped_conversations_file(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl.gz"
    row = {"id": "a", "conversations": [{"from": "human", "value": "zz"}, {"from": "gpt", "value": "ab"}]}
    with gzip.open(path, "wt", encoding="utf-8") as file:
        file.write(json.dumps(row) + "\n")
    tokenizer = FakeTokenizer()

    texts = list(answer_texts(path))
    counts = token_counts(tokenizer, texts, 256)

    assert texts == ["ab"]
    assert int(counts.sum()) == len(tokenizer.encode("ab", add_special_tokens=False))
