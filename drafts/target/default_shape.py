"""The chain a target drafts against by default: the best measured shape for how the target runs, in one place.

A round drafts G tokens and the target verifies G+1 positions in one forward. Whether a longer chain
pays depends on what that forward costs against a one-token step. On a CPU with the packed target
(:mod:`drafts.target.packed_linear`, the CPU float32 default) the shipped MoA draft (int8, as the app
runs it), chains 2, 3 and 4 interleaved per prompt against ``ar`` (sharegpt-heldout, T=0, 8 x 96, one
thread on a core shared with other jobs; ``drafts/bench/results/2026-12-02-s7/packed-default``), in
CPU-time speedup over ``ar`` (two runs): chain 2 1.05x / 1.05x, chain 3 1.04x / 1.02x, chain 4
0.98x / 0.97x (tau 1.49, 1.57, 1.58: the third and fourth drafted tokens are rarely kept, and each costs a
draft step and a wider verify). Session 6 agreed (chain 2 1.10x, chain 4 1.02x of ``ar``). Elsewhere
(dense layers, a GPU, a remote verifier, whose round trips make longer chains pay) the chain stays 4.

Used by ``moa-bench`` (no ``--chain``) and by the app's settings (``chain = 0``: the local engine's
default).

The remote engine's default is a tree, chosen by where the verifier runs (Welcome's
``capabilities.device_kind``; a server that does not say is taken for a CPU): over 4g and lan
(``drafts/bench/results/2026-12-02-s7/remote``, shipped MoA, T=0), round trips per 100 tokens are chain
4 68.8 / 71.4 (humaneval / sharegpt), tree 4,4,16 54.2 / 58.3, tree 6,10,60 46.9 / 49.0. On a CPU
verifier a 61-node verify costs 3.8 one-token steps and 17 nodes 1.8, so 4,4,16 gives the most tokens
per second (0.69-0.77x API streaming against chain 4's 0.55x); on a GPU a 61-node verify costs about
one step, so 6,10,60 (fewest round trips) is best. The settings ask for it with :data:`VERIFIER_DEFAULT`.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from drafts.drafters.base import DraftShape
from drafts.target.packed_linear import resolve_linear

PACKED_CPU_CHAIN = 2  # the packed target on a CPU: the best measured chain
DEFAULT_CHAIN = 4  # dense layers, a GPU: the long-standing default
VERIFIER_CPU_TREE = "4,4,16"  # the remote engine's default with a CPU verifier
VERIFIER_GPU_TREE = "6,10,60"  # ... with a verifier on an accelerator (cuda, mps)
VERIFIER_DEFAULT = DraftShape(gamma=0)  # "the verifier's default": resolved by verifier_shape() once connected


def default_chain(device: torch.device, dtype: torch.dtype, linear: str = "auto") -> int:
    """G for a target on ``device`` in ``dtype`` whose Linear layers run as ``linear`` (auto | packed | dense)."""
    return PACKED_CPU_CHAIN if resolve_linear(linear, device, dtype) == "packed" else DEFAULT_CHAIN


@lru_cache(maxsize=8)  # read every round: parse each tree once
def verifier_shape(device_kind: str | None) -> DraftShape:
    """The remote engine's default shape for a verifier on ``device_kind`` (None, unsaid: a CPU)."""
    return DraftShape.parse_tree(VERIFIER_CPU_TREE if device_kind in (None, "cpu") else VERIFIER_GPU_TREE)


def is_verifier_default(shape: DraftShape) -> bool:
    """Whether ``shape`` leaves the choice to :func:`verifier_shape` (no chain length, no tree asked)."""
    return shape == VERIFIER_DEFAULT
