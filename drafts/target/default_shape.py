"""The shape a target drafts against by default: the best measured shape for how the target runs, in one place.

A round drafts a chain of G tokens, or an EAGLE-2 tree, and the target verifies its positions in one
forward. Whether a wider draft pays depends on what that forward costs against a one-token step. On a CPU
with the packed target (:mod:`drafts.target.packed_linear`, the CPU float32 default) a verify of 5-9
positions costs 1.1-1.3 steps (1.5-1.7 before session 25 laid the weights out for verify rows), so a *small
tree* pays: it keeps several candidates where the draft's top-1 is wrong. The shipped MoA draft (int8, as
the app runs it), interleaved per prompt against ``ar`` (sharegpt-heldout, T=0, 8 x 96, one thread on a shared core;
``drafts/bench/results/2026-12-02-s8/cpu-shapes``), CPU-time speedup over ``ar`` in three runs: tree 3,4,8
1.21x / 1.18x / 1.15x (tau 1.94), tree 3,2,4 1.18x / 1.17x / 1.15x (tau 1.76), chain 2 1.05x / 1.05x / 1.01x
(tau 1.50), chain 3 0.99x / 1.00x; with the MoA shipped in session 8, tree 3,4,8 1.34x (tau 2.09), 3,2,4
1.20x, chain 2 1.03x (tau 1.60); all identical to ``ar``. Session 7 chose chain 2 among chains
(``2026-12-02-s7/packed-default``: chain 2 1.05x, chain 4 0.98x). Session 12 (the session-11 MoA, against the
faster packed layers, whose ``ar`` step fell from 49.0 to 37.9 ms: ``2026-12-02-s12/cpu-speed``): tree 3,4,8
1.17x / 1.13x (tau 2.18), the small trees 2,3,6 / 3,3,6 / 3,4,6 / 4,4,8 / 4,4,10 within each other's noise
(1.08-1.23x, reordering between runs), chain 2 1.09x / 1.08x; each shape's round timed alone puts 3,4,8 first
(1.28x modelled, 4,4,10 1.27x, 3,4,6 1.25x), so it stays. Session 25 (the session-24 MoA, the weights laid out
for verify rows, a 2-core Xeon; ``2026-12-04-s25/cpu-shapes`` and ``cpu-speed``, 16 x 96, two runs): tree
3,4,8 1.59x / 1.61x (tau 2.52), 4,4,10 1.60x / 1.60x, chain 3 1.57x / 1.58x, chain 4 and 5 1.54x, 4,6,12
1.54x, 5,8,16 1.49x, 6,8,20 1.42x: 3,4,8 stays. Elsewhere (dense layers, a GPU) the chain stays 4.

Used by ``moa-bench`` (no ``--chain`` or ``--tree``) and by the app's settings (``chain = 0``: the local engine's
default).

The remote engine's default is a tree, chosen by where the verifier runs (Welcome's
``capabilities.device_kind``; a server that does not say is taken for a CPU): over 4g and lan
(``drafts/bench/results/2026-12-02-s7/remote``, shipped MoA, T=0), round trips per 100 tokens are chain
4 68.8 / 71.4 (humaneval / sharegpt), tree 4,4,16 54.2 / 58.3, tree 6,10,60 46.9 / 49.0. On a CPU
verifier a 61-node verify costs 3.8 one-token steps and 17 nodes 1.8 (1.6 since session 25), so 4,4,16
gives the most tokens per second (0.69-0.77x API streaming against chain 4's 0.55x; session 25, the s24
MoA on 4g: rounds 0.78-0.83x, 6,10,60 0.55-0.65x, chain 4 0.71-0.74x, and the stream at 4,4,16
1.02-1.13x, ``2026-12-04-s25/remote``); on a GPU a 100-node verify costs about one step, so a wide tree
(fewest round trips) is best. The settings ask for it with :data:`VERIFIER_DEFAULT`.

The GPU tree is 6,10,100 (``drafts/bench/results/2026-12-02-s8/trees`` and ``remote-s8``, T=0): it drafts
as cheaply as 6,10,60 (the same 6 levels of a 10-node frontier; only the final pick keeps more nodes) for
2-4 % more tau: in-process 6 x 96, session-7 drafts, MoA sharegpt-heldout 2.53 -> 2.58, humaneval 2.20 ->
2.28; remote 3 x 64 over 4g, session-8 drafts, 45.3 -> 44.3 (humaneval) and 45.3 -> 44.8 (sharegpt)
round trips per 100 tokens. 10,10,100 gives the same round trips with the session-8 drafts (44.3 /
44.8) for ~1.5x the client's draft time (10 levels a round), so it is not taken. moa-server takes up to
128 nodes on an accelerator (``server_stub.config.MAX_TREE_ACCELERATOR``) and 64 on a CPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import lru_cache

import torch

from drafts.drafters.base import DraftShape
from drafts.errors import ConfigError
from drafts.target.device import is_accelerator
from drafts.target.packed_linear import resolve_linear

PACKED_CPU_TREE = "3,4,8"  # the packed target on a CPU: the best measured shape
DEFAULT_CHAIN = 4  # dense layers, a GPU: the long-standing default
VERIFIER_CPU_TREE = "4,4,16"  # the remote engine's default with a CPU verifier
VERIFIER_GPU_TREE = "6,10,100"  # ... with a verifier on an accelerator (cuda, mps)
VERIFIER_DEFAULT = DraftShape(gamma=0)  # "the verifier's default": resolved by verifier_shape() once connected


def local_shape(device: torch.device, dtype: torch.dtype, linear: str = "auto") -> DraftShape:
    """The shape for a target on ``device`` in ``dtype`` whose Linear layers run as ``linear`` (auto | packed |
    dense), verified in-process: ``moa-bench`` and the local engine."""
    if resolve_linear(linear, device, dtype) == "packed":
        return DraftShape.parse_tree(PACKED_CPU_TREE)
    return DraftShape(gamma=DEFAULT_CHAIN)


def asked_shape(
    tree: str | None, chain: int | None, confidence: float, default: Callable[[], DraftShape]
) -> DraftShape:
    """The shape command-line flags ask for: ``--tree``, ``--chain`` (with ``--confidence``), else ``default()``
    (:func:`local_shape`, only then resolved); ``--confidence`` shapes chains, so a default tree needs ``--chain``."""
    if tree:
        shape = DraftShape.parse_tree(tree)
    elif chain is not None:
        shape = DraftShape(gamma=chain)
    else:
        shape = default()
        if confidence and shape.is_tree:
            raise ConfigError(f"--confidence shapes a chain, and the default here is {shape.describe()}: add --chain G")
    return dataclasses.replace(shape, min_confidence=confidence)


@lru_cache(maxsize=8)  # read every round: parse each tree once
def verifier_shape(device_kind: str | None) -> DraftShape:
    """The remote engine's default shape for a verifier on ``device_kind`` (None, unsaid: a CPU)."""
    return DraftShape.parse_tree(VERIFIER_GPU_TREE if is_accelerator(device_kind) else VERIFIER_CPU_TREE)


def is_verifier_default(shape: DraftShape) -> bool:
    """Whether ``shape`` leaves the choice to :func:`verifier_shape` (no chain length, no tree asked)."""
    return shape == VERIFIER_DEFAULT
