"""Logits to probabilities, and sampling: the one home of both.

The draft (proposal distribution ``q``) and the target (``p``) go through the same
``logits_to_probs`` so that temperature, top-k and top-p transform them identically, which the
lossless acceptance rules in :mod:`drafts.acceptance` require.

Temperature 0 means greedy: ``logits_to_probs`` then returns the one-hot distribution of the
argmax, which makes every acceptance rule reduce to "accept iff the token is the argmax".

The settings are validated where they enter (this config; the protocol builds it from a frame),
so no value can turn into NaN inside a batched float32 computation shared with other clients:
``logits.float() / temperature`` overflows for temperature 1e-45 (a float32 subnormal) and
``top_p = 5e-324`` is 0 in float32 (every token masked, softmax of nothing). Bounds:

- ``temperature`` is 0 or in [1e-3, 1e3]: real logits stay within +-1e4, so logits / T stays
  below 1e7, far inside float32; below 1e-3 sampling is the argmax anyway (use 0), above 1e3
  every distribution is uniform to within float32's rounding of the softmax.
- ``top_p`` is in [1e-6, 1]: the top token alone holds >= 1/V of the mass, more than 1e-6 for
  any vocabulary under a million, so a smaller top_p means the same as 1e-6 (the top token).
- ``seed`` is an int in [0, 2**64) (what ``torch.Generator.manual_seed`` takes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from drafts.errors import ConfigError

MIN_TEMPERATURE = 1e-3  # see the module docstring: the bounds keep float32 finite
MAX_TEMPERATURE = 1e3
MIN_TOP_P = 1e-6


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class SamplingConfig:
    """How tokens are chosen from a distribution."""

    temperature: float = 0.0  # 0 = greedy (argmax); > 0 divides the logits
    top_k: int = 0  # keep the k most likely tokens; 0 = off
    top_p: float = 1.0  # keep the smallest set with this much mass; 1.0 = off
    seed: int | None = None  # seeds the generator of a decoding run; None = nondeterministic

    def __post_init__(self) -> None:
        if not _is_number(self.temperature) or not (
            self.temperature == 0 or MIN_TEMPERATURE <= self.temperature <= MAX_TEMPERATURE
        ):
            raise ConfigError(
                f"temperature must be 0 (greedy) or in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}], got "
                f"{self.temperature!r}; below {MIN_TEMPERATURE:g} sampling is greedy anyway: use 0"
            )
        if not isinstance(self.top_k, int) or isinstance(self.top_k, bool) or self.top_k < 0:
            raise ConfigError(f"top_k must be an int >= 0 (0 turns it off), got {self.top_k!r}")
        if not _is_number(self.top_p) or not MIN_TOP_P <= self.top_p <= 1.0:
            raise ConfigError(
                f"top_p must be in [{MIN_TOP_P:g}, 1], got {self.top_p!r}; use 1.0 to turn it off "
                f"(any smaller top_p keeps the top token alone, as {MIN_TOP_P:g} does)"
            )
        if self.seed is not None and (
            not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2**64
        ):
            raise ConfigError(f"seed must be None or an int in [0, 2**64), got {self.seed!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def generator(self, device: torch.device | str = "cpu") -> torch.Generator:
        """A torch generator for this run (seeded if ``seed`` is set)."""
        gen = torch.Generator(device=device)
        if self.seed is None:
            gen.seed()
        else:
            gen.manual_seed(self.seed)
        return gen


def logits_to_probs(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """Turn logits (..., V) into probabilities (..., V) under ``cfg``.

    Greedy configs give the one-hot distribution of the argmax.
    """
    if cfg.greedy:
        probs = torch.zeros_like(logits, dtype=torch.float32)
        return probs.scatter_(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
    logits = logits.float() / cfg.temperature
    if cfg.top_k > 0 and cfg.top_k < logits.shape[-1]:
        kth = torch.topk(logits, cfg.top_k, dim=-1).values[..., -1:]  # (..., 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if cfg.top_p < 1.0:
        logits = _mask_top_p(logits, cfg.top_p)
    return torch.softmax(logits, dim=-1)


def _mask_top_p(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Mask everything outside the smallest set of tokens holding ``top_p`` of the mass."""
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    cum = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
    drop_sorted = (cum - torch.softmax(sorted_logits, dim=-1)) >= top_p  # mass before >= p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def sample(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw one token id per row of ``probs`` (..., V) -> (...,)."""
    flat = probs.reshape(-1, probs.shape[-1])
    ids = torch.multinomial(flat, 1, generator=generator)  # (rows, 1)
    return ids.reshape(probs.shape[:-1])


def choose(logits: torch.Tensor, cfg: SamplingConfig, generator: torch.Generator | None) -> int:
    """Pick the next token from one row of logits (V,): argmax when greedy, else a sample."""
    if cfg.greedy:
        return int(logits.argmax())
    return int(sample(logits_to_probs(logits, cfg), generator))
