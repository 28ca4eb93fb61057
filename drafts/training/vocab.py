"""The reduced draft vocabulary: the most frequent target tokens of the training responses.

On SmolLM2-135M the LM head (576 x 49,152) costs more than the rest of a draft; drafting over
the most frequent tokens only cuts that, and verification stays on the full vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from drafts.training.tokenize import Sequence


def frequent_tokens(
    sequences: Iterable[Sequence], size: int, vocab_size: int, always: Iterable[int] = ()
) -> tuple[torch.Tensor, float]:
    """(d2t: the ``size`` most frequent response token ids sorted, coverage of response tokens)."""
    counts = torch.zeros(vocab_size, dtype=torch.long)
    for seq in sequences:
        counts += torch.bincount(seq.ids[seq.loss_mask], minlength=vocab_size)
    total = max(1, int(counts.sum()))
    if size >= vocab_size:
        return torch.arange(vocab_size), 1.0
    ranked = counts.clone()
    ranked[torch.tensor(sorted(set(always)), dtype=torch.long)] = counts.max() + 1  # stop tokens stay draftable
    top = ranked.topk(size).indices.sort().values
    return top, float(counts[top].sum()) / total
