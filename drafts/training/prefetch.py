"""Tokenizing the conversations a run reads next on a worker thread, while the device computes.

A batch of 16 conversations costs ~60 ms of chat templating and tokenizing on the CPU, as much as a
GPU's forward and backward over it. ``ahead`` hands the next indices to one worker thread (the only
one using the tokenizer while the run trains); ``get`` returns a conversation's sequence, from the
worker if it was asked ahead, computed here if not. Tokenizing is a pure function of the index, so
the run's data, and its exact resumption, do not depend on what was fetched ahead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor

from drafts.training.tokenize import Sequence

Tokenize = Callable[[int], Sequence | None]  # conversation index -> its training sequence (None: nothing to train)


class Prefetcher:
    def __init__(self, tokenize: Tokenize) -> None:
        self._tokenize = tokenize
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="moa-train-tokenize")
        self._pending: dict[int, Future[Sequence | None]] = {}

    def ahead(self, indices: Iterable[int]) -> None:
        """Start tokenizing ``indices`` (those not already started) on the worker, in order."""
        for index in indices:
            if index not in self._pending:
                self._pending[index] = self._pool.submit(self._tokenize, index)

    def get(self, index: int) -> Sequence | None:
        future = self._pending.pop(index, None)
        return self._tokenize(index) if future is None else future.result()
