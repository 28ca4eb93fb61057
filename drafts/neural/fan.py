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

On a slow link the proposal reaches the server ``lead`` steps late (session 12: on 4g the step
takes ~60 ms, the way there and back with the draft ~100 ms), so it must spell ``lead`` of the
server's tokens before any of it applies. A fan led ``lead`` levels covers them with a beam: the
``width`` likeliest paths of ``lead`` tokens by the draft's joint probability (the top pairs for
``lead`` 2), then a greedy chain below each; the server still keeps one chain::

    root ─ a1 ─ b1 ─ c1          lead 2: paths (a1 b1), (a1 b2), (a2 b3) are the top 3 pairs
         │    └ b2 ─ c2          a3 stays a leaf: no pair through it made the beam
         ├ a2 ─ b3 ─ c3
         └ a3

Candidates are deterministic (q = δ): the multi-candidate acceptance rule verifies them losslessly
at any temperature (:mod:`drafts.acceptance`), as EAGLE-2's trees (:mod:`drafts.neural.tree_search`).
"""

from __future__ import annotations

import torch

from drafts.neural.base import NeuralDraft
from drafts.tree import DraftTree


def fan_tree(model: NeuralDraft, root: int, position: int, width: int, depth: int, lead: int = 1) -> DraftTree:
    """``width`` paths of ``depth`` tokens below ``root`` (at ``position``); nodes level by level.

    The first ``lead`` levels hold the ``width`` likeliest paths by the draft's joint probability
    (a beam: each level keeps the best ``width`` of the paths' top-``width`` continuations), the
    levels below a greedy chain under each; ``lead`` 1 is the plain fan."""
    device = model.parts.head_weight.device
    logits, state = model.step(
        torch.tensor([root], device=device), torch.tensor([position], device=device), None, model.initial_state()
    )
    width, lead = min(width, logits.shape[-1]), max(1, min(lead, depth))
    scores, level = torch.topk(torch.log_softmax(logits[-1].float(), dim=-1), width)  # (width,): best first
    levels, parents = [model.parts.to_target_ids(level)], [torch.zeros(width, dtype=torch.int64)]
    ancestors = [[0, 1 + i] for i in range(width)]  # each fed token's scratch slots (itself included)
    state = None if state is None else state.expand(width, *state.shape[1:]).contiguous()  # EAGLE's features
    for d in range(2, depth + 1):
        positions = torch.full((width,), position + d - 1, device=device)
        logits, state = model.step(levels[-1].to(device), positions, _mask(ancestors, device), state)
        if d <= lead:  # the beam: the best ``width`` continuations of the paths so far
            parent, level, scores = _beam(logits.float(), scores, width)
        else:  # the chains: each path's greedy next token
            parent, level = torch.arange(width), logits.argmax(dim=-1)
        state = None if state is None else state.index_select(0, parent.to(device))
        slot = 1 + width * (d - 1)  # the first scratch slot of the tokens fed next
        ancestors = [[*ancestors[p], slot + i] for i, p in enumerate(parent.tolist())]
        levels.append(model.parts.to_target_ids(level))
        parents.append(parent.cpu())
    return _as_tree(levels, parents, width)


def _beam(logits: torch.Tensor, scores: torch.Tensor, width: int) -> tuple[torch.Tensor, ...]:
    """The ``width`` best (path, next token) pairs by summed log-probability: their paths, tokens, scores."""
    joint = scores.to(logits.device)[:, None] + torch.log_softmax(logits, dim=-1)  # (width, Dv)
    best, flat = torch.topk(joint.flatten(), width)
    return (flat // joint.shape[-1]).cpu(), flat % joint.shape[-1], best


def _mask(ancestors: list[list[int]], device: torch.device) -> torch.Tensor:
    """(n, S) bool: fed token i sees the scratch slots ``ancestors[i]`` (the root, its path, itself).

    Scratch slots: the root, then each level's ``width`` tokens in order (the new ones last)."""
    mask = torch.zeros(len(ancestors), 1 + max(a[-1] for a in ancestors), dtype=torch.bool, device=device)
    for row, slots in enumerate(ancestors):
        mask[row, slots] = True
    return mask


def _as_tree(levels: list[torch.Tensor], parents: list[torch.Tensor], width: int) -> DraftTree:
    """Level by level: node 1 + level * width + i is path i's token at that level, below node
    1 + (level - 1) * width + parents[level][i] (the root for level 0)."""
    tokens: list[int] = []
    tree_parents: list[int] = []
    for level, (ids, up) in enumerate(zip(levels, parents, strict=True)):
        tokens += ids.tolist()
        tree_parents += [0] * width if level == 0 else [1 + (level - 1) * width + p for p in up.tolist()]
    return DraftTree(tuple(tokens), tuple(tree_parents))
