"""Building a trained draft of any kind for a target, with matched trainable parameters.

MoA is sized first; EAGLE's and the independent draft's MLP widths are then solved so that
their trainable parameters match MoA's (the comparison of the MoA paper is at equal size).
The kinds themselves are declared in :mod:`drafts.neural.kinds`; the model packages are
imported here only when a draft is sized (training, tests), never when this module loads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from drafts.errors import ConfigError
from drafts.neural.base import NeuralDraft
from drafts.neural.kinds import KIND_NAMES, draft_kind
from drafts.neural.target_parts import TargetParts
from drafts.target.runner import TargetRunner

KINDS = KIND_NAMES


def target_geometry(runner: TargetRunner) -> tuple[int, int, int]:
    """(layers L, keys+values width per layer, hidden H) of the target."""
    c = runner.config
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    kv_heads = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    return int(c.num_hidden_layers), int(2 * kv_heads * head_dim), int(c.hidden_size)


def default_config(kind: str, runner: TargetRunner, tli_layers: int = 0) -> dict[str, Any]:
    """Sizes of a ``kind`` draft for ``runner``'s target; ``tli_layers``: MoA's Target Layer Inference N."""
    from drafts.eagle.model import EagleConfig, EagleDraft
    from drafts.independent.model import IndependentConfig, IndependentDraft
    from drafts.moa.config import MoAConfig
    from drafts.moa.model import MoADraft

    draft_kind(kind)  # an unknown kind is refused with the list of kinds
    layers, kv_width, hidden = target_geometry(runner)
    if tli_layers and kind != "moa":
        raise ConfigError(f"--tli {tli_layers} applies to MoA drafts only; drop it for --draft {kind}")
    moa = MoAConfig.for_target(layers, kv_width, hidden, tli_layers=tli_layers)
    if kind == "moa":
        return moa.to_dict()
    budget = _count(MoADraft(replace(moa, tli_layers=0), _meta_parts(hidden)))  # the reused layers are frozen
    if kind == "eagle":
        base = EagleConfig(layers, hidden, moa.heads, moa.kv_heads, 0)
        fixed = _count(EagleDraft(base, _meta_parts(hidden)))
        return EagleConfig(layers, hidden, moa.heads, moa.kv_heads, _solve_width(budget, fixed, 3 * hidden)).to_dict()
    if kind == "independent":
        indep = IndependentConfig(hidden, moa.heads, moa.kv_heads, 0)
        fixed = _count(IndependentDraft(indep, _meta_parts(hidden)))
        width = _solve_width(budget, fixed, 3 * hidden * indep.layers)
        return IndependentConfig(hidden, moa.heads, moa.kv_heads, width).to_dict()
    raise ConfigError(f"draft kind {kind!r} is declared in drafts.neural.kinds but has no sizing rule here; add one")


def build_draft(kind: str, config: dict[str, Any], parts: TargetParts) -> NeuralDraft:
    return draft_kind(kind).build(config, parts)


def _solve_width(budget: int, fixed: int, per_unit: int) -> int:
    """MLP width (a multiple of 32) that brings ``fixed`` parameters closest to ``budget``."""
    return max(32, round((budget - fixed) / per_unit / 32) * 32)


def _count(model: NeuralDraft) -> int:
    return sum(p.numel() for p in model.parameters())


def _meta_parts(hidden: int) -> TargetParts:
    """Stand-in target parts for counting parameters (nothing is computed)."""
    embed = torch.nn.Embedding(1, hidden)
    return TargetParts(embed, torch.zeros(1, hidden), torch.zeros(1, dtype=torch.long), 1)
