"""Configuration of one decoding run."""

from __future__ import annotations

from dataclasses import dataclass, field

from drafts.drafters.base import DraftShape
from drafts.errors import ConfigError
from drafts.sampling import SamplingConfig


@dataclass(frozen=True)
class DecodeConfig:
    max_new_tokens: int = 128
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    shape: DraftShape = field(default_factory=DraftShape)  # chain/tree per round (speculative only)
    stop_strings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ConfigError(f"--max-new-tokens must be >= 1, got {self.max_new_tokens}")
