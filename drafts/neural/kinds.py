"""Every kind of trained draft, declared once: the one table the trainer, the loaders, the
drafter registry, the client engine, the settings and the verifier ask about a kind.

The table names each kind's config and model classes by module path and imports them only
when asked, so importing it pulls in neither torch nor a model package (``moa-chat`` reads it
while parsing flags), ``drafts.neural`` never imports ``drafts.moa``/``drafts.eagle`` at import
time, and nothing here reaches ``drafts.training``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drafts.errors import ConfigError

if TYPE_CHECKING:
    from drafts.neural.base import NeuralDraft
    from drafts.neural.target_parts import TargetParts


@dataclass(frozen=True)
class DraftKind:
    name: str  # what checkpoints record (config.json "kind") and --draft takes
    description: str  # one line for --help and the method lists
    config_class: str  # "module:Class", the frozen config its config.json holds
    model_class: str  # "module:Class", a drafts.neural.base.NeuralDraft
    target_state: str  # what it reads of the target per committed token (the model's ``needs`` says exactly)
    server_compresses: bool = False  # the verifier can run its first part and send one vector per token
    trained: bool = True  # built from a checkpoint (moa-train writes one)

    def config_type(self) -> type[Any]:
        return _import(self.config_class)

    def model_type(self) -> Callable[[Any, TargetParts], NeuralDraft]:
        """The model class: called with (its config, the target's parts)."""
        return _import(self.model_class)

    def build(self, config: dict[str, Any], parts: TargetParts) -> NeuralDraft:
        """A fresh (randomly initialised) model of this kind from its config.json ``config``."""
        return self.model_type()(self.config_type()(**config), parts)


DRAFT_KINDS: tuple[DraftKind, ...] = (
    DraftKind(
        "moa",
        "Mixture of Attentions draft (trained)",
        "drafts.moa.config:MoAConfig",
        "drafts.moa.model:MoADraft",
        "every layer's keys and values (or the memory vectors the verifier compresses them to)",
        server_compresses=True,
    ),
    DraftKind(
        "eagle",
        "EAGLE-style feature draft (trained baseline)",
        "drafts.eagle.model:EagleConfig",
        "drafts.eagle.model:EagleDraft",
        "the final hidden state",
    ),
    DraftKind(
        "independent",
        "independent small LM draft (trained baseline)",
        "drafts.independent.model:IndependentConfig",
        "drafts.independent.model:IndependentDraft",
        "nothing (tokens only)",
    ),
)

KIND_NAMES: tuple[str, ...] = tuple(k.name for k in DRAFT_KINDS)


def draft_kind(name: str) -> DraftKind:
    for kind in DRAFT_KINDS:
        if kind.name == name:
            return kind
    raise ConfigError(f"unknown draft kind {name!r}; choose from {', '.join(KIND_NAMES)}")


def compressed_kinds() -> tuple[str, ...]:
    """The kinds whose first part the verifier can run (``--draft-checkpoint`` takes these)."""
    return tuple(k.name for k in DRAFT_KINDS if k.server_compresses)


def _import(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)
