"""Extension point: every drafter moa-bench and the engines can build, by name.

A factory takes the target runner and the per-prompt reference (the target's greedy output,
used only by the oracle) and returns a fresh :class:`~drafts.drafters.base.Drafter`.
Trained drafts (moa, eagle, independent) register here when their package is importable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from drafts.drafters.base import Drafter
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.drafters.oracle import OracleDrafter
from drafts.errors import ConfigError
from drafts.target.runner import TargetRunner


@dataclass(frozen=True)
class DrafterSpec:
    name: str
    build: Callable[[TargetRunner, list[int]], Drafter]  # (runner, reference tokens) -> drafter
    needs_reference: bool = False  # True: must be given the target's greedy output first
    description: str = ""


_REGISTRY: dict[str, DrafterSpec] = {}


def register(spec: DrafterSpec) -> None:
    _REGISTRY[spec.name] = spec


def drafter_spec(name: str) -> DrafterSpec:
    if name not in _REGISTRY:
        raise ConfigError(f"unknown method {name!r}; choose from ar, generate, {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def drafter_names() -> list[str]:
    return sorted(_REGISTRY)


register(DrafterSpec("lookup", lambda runner, ref: PromptLookupDrafter(), description="prompt lookup (n-gram)"))
register(
    DrafterSpec(
        "oracle", lambda runner, ref: OracleDrafter(ref), needs_reference=True,
        description="replays the target's greedy output (bench only)",
    )
)
