"""A smaller draft vocabulary cut from a trained one, without retraining (FR-Spec's idea).

A draft's LM head is the target's own frozen rows for its draft vocabulary (``d2t``, 16,384 of
SmolLM2's 49,152 tokens). On a CPU that product is about half of a draft step, and its cost is
linear in the rows. Keeping only the ``N`` rows the target emits most often (ranked on the
target's own answers to training questions, ties broken by ShareGPT's training answers; the
stop tokens always stay) cuts it to N/16k; a token outside the kept rows can no longer be
drafted, which the *coverage* (share of the target's greedy tokens the rows contain) measures.
Verification stays on the full vocabulary, so outputs never change, only tau.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from drafts.errors import ConfigError


def answer_texts(path: Path) -> Iterator[str]:
    """The assistant turns of a conversations file in the regenerator's format (``.jsonl`` or ``.jsonl.gz``)."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as file:
        for line in file:
            if line.strip():
                for turn in json.loads(line)["conversations"]:
                    if turn["from"] == "gpt":
                        yield turn["value"]


def token_counts(tokenizer: Any, texts: Iterable[str], vocab_size: int) -> torch.Tensor:
    """(V,) how often each target token occurs in ``texts`` (tokenized without special tokens)."""
    counts = torch.zeros(vocab_size, dtype=torch.long)
    for text in texts:
        ids = tokenizer.encode(text, add_special_tokens=False)
        if ids:
            counts += torch.bincount(torch.tensor(ids), minlength=vocab_size)
    return counts


def rank_rows(d2t: torch.Tensor, primary: torch.Tensor, secondary: torch.Tensor, always: Iterable[int]) -> torch.Tensor:
    """(Dv,) draft ids, most frequent target token first: ``always`` (stop ids), then by ``primary``
    counts (V,), ties by ``secondary`` (V,), then by draft id (a stable, reproducible order)."""
    p, s = primary[d2t].double(), secondary[d2t].double()
    key = p * (float(secondary.max()) + 1.0) + s  # lexicographic (primary, secondary), exact in float64
    keep = torch.isin(d2t, torch.tensor(sorted(set(always)), dtype=d2t.dtype))
    key[keep] = float("inf")
    return torch.sort(-key, stable=True).indices


def prune(d2t: torch.Tensor, ranking: torch.Tensor, keep: int) -> torch.Tensor:
    """The ``keep`` highest-ranked entries of ``d2t``, in d2t's own (ascending target id) order."""
    if not 0 < keep <= d2t.numel():
        raise ConfigError(f"--draft-vocab {keep}: choose 1 to the draft's own {d2t.numel()} tokens")
    return d2t[ranking[:keep].sort().values]


def coverage(d2t: torch.Tensor, tokens: Iterable[int]) -> float:
    """Share of ``tokens`` (target ids) the draft vocabulary ``d2t`` contains."""
    ids = torch.tensor(list(tokens), dtype=torch.long)
    if ids.numel() == 0:
        raise ConfigError("no tokens to measure the draft vocabulary's coverage on")
    return float(torch.isin(ids, d2t).float().mean())
