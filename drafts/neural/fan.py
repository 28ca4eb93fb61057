"""A fan: the draft's top ``width`` guesses for the next token, each with its own greedy chain below.

Speculative streaming's proposals (:mod:`drafts.proposal_match`) reach the server about one step
after the token they were drafted from, so a proposal's first level is a guess of the token the
server made meanwhile, and the server keeps only the subtree below the guess that was right. A
chain applies when the draft's top-1 is right; a fan applies when the token is among its top
``width`` (with the shipped MoA on sharegpt-heldout: top-1 0.30, top-4 0.61 of positions), and
the server still verifies one chain, so a wider first level costs draft time, not verification::

    root ─ a1 ─ b1 ─ c1          depth 1: the root's top-``width`` tokens, best first
         ├ a2 ─ b2 ─ c2          depth 2..depth: each chain's greedy next token, the ``width``
         └ a3 ─ b3 ─ c3          chains stepped together (each sees its own ancestors only)

Candidates are deterministic (q = δ): the multi-candidate acceptance rule verifies them losslessly
at any temperature (:mod:`drafts.acceptance`), as EAGLE-2's trees (:mod:`drafts.neural.tree_search`).
"""

from __future__ import annotations

import torch

from drafts.neural.base import NeuralDraft
from drafts.tree import DraftTree


def fan_tree(model: NeuralDraft, root: int, position: int, width: int, depth: int) -> DraftTree:
    """``width`` chains, ``depth`` tokens each, below ``root`` (at ``position``); nodes level by level."""
    device = model.parts.head_weight.device
    logits, state = model.step(
        torch.tensor([root], device=device), torch.tensor([position], device=device), None, model.initial_state()
    )
    width = min(width, logits.shape[-1])
    level = _top(model, logits[-1], width)  # (width,) target ids: the first level, best first
    levels = [level]
    state = None if state is None else state.expand(width, *state.shape[1:]).contiguous()  # EAGLE's features
    for d in range(2, depth + 1):
        positions = torch.full((width,), position + d - 1, device=device)
        logits, state = model.step(level.to(device), positions, _mask(width, d, device), state)
        level = model.parts.to_target_ids(logits.argmax(dim=-1))
        levels.append(level)
    return _as_tree(levels, width)


def _top(model: NeuralDraft, logits: torch.Tensor, k: int) -> torch.Tensor:
    return model.parts.to_target_ids(torch.topk(logits, k).indices)


def _mask(width: int, d: int, device: torch.device) -> torch.Tensor:
    """(width, 1 + width * (d - 1)) bool: chain i at depth d sees the root (slot 0) and its own slots.

    Scratch slots: the root, then each level's ``width`` tokens in order (the new ones last)."""
    slots = 1 + width * (d - 1)
    mask = torch.zeros(width, slots, dtype=torch.bool, device=device)
    mask[:, 0] = True
    own = torch.arange(width, device=device)
    for level in range(d - 1):
        mask[own, 1 + level * width + own] = True
    return mask


def _as_tree(levels: list[torch.Tensor], width: int) -> DraftTree:
    """Level by level: node 1 + level * width + i is chain i's token at that level."""
    tokens: list[int] = []
    parents: list[int] = []
    for level, ids in enumerate(levels):
        tokens += ids.tolist()
        parents += [0] * width if level == 0 else [1 + (level - 1) * width + i for i in range(width)]
    return DraftTree(tuple(tokens), tuple(parents))
