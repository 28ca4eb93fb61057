"""What the local engine runs: its frozen configuration, and loading the target and the draft.

The target runs on this device (cuda, mps or cpu), with the draft beside it; ``draft=None``
is the draftless variant: the target alone, one token per forward (for a device where the
draft does not pay: ``--local`` without a draft).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from drafts.drafters.base import Drafter
from drafts.errors import ConfigError
from drafts.target.device import DEVICE_CHOICES, DTYPE_CHOICES, resolve_device, resolve_dtype
from drafts.target.loading import load_target
from drafts.target.packed_linear import LINEAR_CHOICES
from drafts.target.runner import TargetRunner


@dataclass(frozen=True)
class LocalConfig:
    """How the local engine is built (at the edge: CLI, TOML) and how often it reports."""

    target: str | None = None  # alias, .gguf, directory or hub id (None: the bundled SmolLM2)
    draft: str | None = "moa"  # a drafter of drafts.drafters.registry (moa, eagle, independent, lookup); None: none
    checkpoint: Path | None = None  # the trained draft's checkpoint (None: the one shipped for the target)
    device: str = "auto"  # auto picks cuda, then mps, then cpu
    dtype: str = "auto"  # auto: fp32 on cpu (exactly ar at T = 0), bf16 on cuda, fp16 on mps
    int8_on_cpu: bool = False  # a trained draft on a CPU in fp32 runs int8 layers (drafts.neural.checkpoint.load_draft)
    linear: str = "auto"  # the target's Linear layers: packed for oneDNN on a CPU in fp32 (drafts.target.packed_linear)
    stats_interval_s: float = 0.5  # StatsUpdated about twice a second during a generation

    def __post_init__(self) -> None:
        if self.device.split(":")[0] not in DEVICE_CHOICES:
            raise ConfigError(f"unknown device {self.device!r}; use one of {', '.join(DEVICE_CHOICES)}")
        if self.dtype not in DTYPE_CHOICES:
            raise ConfigError(f"unknown dtype {self.dtype!r}; use one of {', '.join(DTYPE_CHOICES)}")
        if self.linear not in LINEAR_CHOICES:
            raise ConfigError(f"unknown linear mode {self.linear!r}; use one of {', '.join(LINEAR_CHOICES)}")
        if self.checkpoint is not None and self.draft is None:
            raise ConfigError("a draft checkpoint was given without a draft; name the draft (e.g. moa) or drop it")
        if self.stats_interval_s <= 0:
            raise ConfigError(f"stats_interval_s must be > 0, got {self.stats_interval_s}")


def load_models(config: LocalConfig) -> tuple[TargetRunner, Drafter | None]:
    """The target (on ``config.device``) and the draft beside it (None for the draftless variant)."""
    device = resolve_device(config.device)
    runner = TargetRunner(load_target(config.target, device, resolve_dtype(config.dtype, device), config.linear))
    return runner, load_drafter(config, runner)


def load_drafter(config: LocalConfig, runner: TargetRunner) -> Drafter | None:
    if config.draft is None:
        return None
    if config.checkpoint is not None:
        from drafts.neural.checkpoint import load_draft
        from drafts.neural.drafter import NeuralDrafter

        return NeuralDrafter(load_draft(config.checkpoint, runner, config.int8_on_cpu), config.draft)
    from drafts.drafters.registry import drafter_spec

    spec = drafter_spec(config.draft)
    if spec.needs_reference:
        raise ConfigError(f"the {spec.name!r} drafter replays a known answer (benchmarks only); pick moa or lookup")
    return spec.build(runner, [])
