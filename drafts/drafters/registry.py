"""Extension point: every drafter moa-bench and the engines can build, by name.

A factory takes the target runner and the per-prompt reference (the target's greedy output,
used only by the oracle) and returns a fresh :class:`~drafts.drafters.base.Drafter`.
Trained drafts register one method per kind of :mod:`drafts.neural.kinds` (their models are
imported only when one is built).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from drafts.drafters.base import Drafter
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.drafters.oracle import OracleDrafter
from drafts.errors import ConfigError
from drafts.neural.kinds import DRAFT_KINDS
from drafts.target.runner import TargetRunner

if TYPE_CHECKING:
    from drafts.neural.tree_search import TreeScoring


@dataclass(frozen=True)
class DrafterSpec:
    name: str
    build: Callable[[TargetRunner, list[int]], Drafter]  # (runner, reference tokens) -> drafter
    needs_reference: bool = False  # True: must be given the target's greedy output first
    description: str = ""
    trained: bool = False  # True: built from a checkpoint, which --checkpoint may replace


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
        "oracle",
        lambda runner, ref: OracleDrafter(ref),
        needs_reference=True,
        description="replays the target's greedy output (bench only)",
    )
)


# -- trained drafts -------------------------------------------------------------------------
_CHECKPOINTS: dict[str, Path] = {}  # draft name -> checkpoint directory chosen by the user
_LOADED: dict[tuple[int, str], object] = {}  # (id(runner), path) -> loaded model, one per process
_TREE_SCORING: dict[str, TreeScoring] = {}  # draft name -> how its trees rank nodes (default: EAGLE-2's)
_METHOD_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def set_checkpoint(name: str, path: Path) -> None:
    """Use the checkpoint in ``path`` for the trained draft called ``name``.

    A kind (``moa``, ``eagle``, ``independent``) replaces the shipped checkpoint. Any other name
    adds a method of that name, whose kind the checkpoint itself records: two checkpoints of one
    kind (say, fixed vs regenerated training data) then compare in one interleaved run.
    """
    if not _METHOD_NAME.fullmatch(name):
        raise ConfigError(f"a draft name takes letters, digits, '_', '.' and '-' only, got {name!r}")
    if name in _REGISTRY and not _REGISTRY[name].trained:
        raise ConfigError(f"{name!r} is a built-in method without a checkpoint; give the draft another name")
    _CHECKPOINTS[name] = path
    if name not in _REGISTRY:
        register(DrafterSpec(name, _build_neural(name), description=f"trained draft from {path}", trained=True))


def set_tree_scoring(name: str, scoring: TreeScoring) -> None:
    """Rank the nodes of the trained draft ``name``'s trees with ``scoring`` (``moa-bench --tree-scoring``)."""
    if name not in _REGISTRY or not _REGISTRY[name].trained:
        raise ConfigError(f"--tree-scoring names a trained draft (moa, eagle, or a --checkpoint NAME), got {name!r}")
    _TREE_SCORING[name] = scoring


def tree_scorings() -> dict[str, TreeScoring]:
    """The drafts whose trees rank nodes other than by default, by name."""
    return dict(_TREE_SCORING)


def checkpoint_for(kind: str, runner: TargetRunner) -> Path:
    from drafts.locations import shipped_checkpoint

    return _CHECKPOINTS.get(kind) or shipped_checkpoint(runner.fingerprint.name, kind)


def _build_neural(name: str) -> Callable[[TargetRunner, list[int]], Drafter]:
    def build(runner: TargetRunner, reference: list[int]) -> Drafter:
        from drafts.neural.checkpoint import load_draft
        from drafts.neural.drafter import NeuralDrafter
        from drafts.neural.tree_search import DEFAULT_SCORING

        path = checkpoint_for(name, runner)
        key = (id(runner), str(path))
        if key not in _LOADED:
            _LOADED[key] = load_draft(path, runner)
        scoring = _TREE_SCORING.get(name, DEFAULT_SCORING)
        return NeuralDrafter(_LOADED[key], name, tree_scoring=scoring)  # type: ignore[arg-type]

    return build


for _kind in DRAFT_KINDS:
    register(DrafterSpec(_kind.name, _build_neural(_kind.name), description=_kind.description, trained=_kind.trained))
