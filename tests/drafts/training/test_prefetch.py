"""The tokenizing worker: what it fetched ahead is what tokenizing on the spot gives."""

from __future__ import annotations

import threading

import torch

from drafts.training.prefetch import Prefetcher
from drafts.training.tokenize import Sequence


def sequence(index: int) -> Sequence | None:
    if index == 3:
        return None  # a conversation with nothing to train on
    return Sequence(torch.arange(index + 1), torch.ones(index + 1, dtype=torch.bool))


def test_fetched_ahead_or_not_a_conversation_gives_its_own_sequence_once_per_ask() -> None:
    threads: list[str] = []

    def tokenize(index: int) -> Sequence | None:
        threads.append(threading.current_thread().name)
        return sequence(index)

    prefetch = Prefetcher(tokenize)
    prefetch.ahead([0, 1, 3, 1])  # 1 twice: started once

    got = [prefetch.get(i) for i in (0, 1, 3, 2, 1)]

    for index, seq in zip((0, 1, 2), (got[0], got[1], got[3]), strict=True):
        assert seq is not None and torch.equal(seq.ids, torch.arange(index + 1))
    assert got[2] is None
    assert got[4] is not None and torch.equal(got[4].ids, torch.arange(2))  # asked again: tokenized again, here
    assert sum(name.startswith("moa-train-tokenize") for name in threads) == 3  # 0, 1, 3 on the worker
    assert len(threads) == 5
