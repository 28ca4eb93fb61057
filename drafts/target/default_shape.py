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
default); the remote engine's own default is :data:`VERIFIER_CHAIN`.
"""

from __future__ import annotations

import torch

from drafts.target.packed_linear import resolve_linear

PACKED_CPU_CHAIN = 2  # the packed target on a CPU: the best measured chain
DEFAULT_CHAIN = 4  # dense layers, a GPU: the long-standing default
VERIFIER_CHAIN = 4  # a remote verifier: round trips make longer chains pay (the remote engine's default)


def default_chain(device: torch.device, dtype: torch.dtype, linear: str = "auto") -> int:
    """G for a target on ``device`` in ``dtype`` whose Linear layers run as ``linear`` (auto | packed | dense)."""
    return PACKED_CPU_CHAIN if resolve_linear(linear, device, dtype) == "packed" else DEFAULT_CHAIN
