"""One target forward pass over several sessions' draft trees: pad, mask, run, split back.

Row ``b`` of the batch is session ``b``: its committed cache (``c_b`` tokens) and its tree
``[root, node 1..N_b]``. The batch is laid out as::

    keys:   [ past, padded to C = max c_b | new tokens, padded to T = max (N_b + 1) ]
    row b:  [ c_b real, C - c_b padding   | N_b + 1 real, T - N_b - 1 padding      ]

Each row gets its own position ids (``c_b + depth``) and a boolean mask built like
:meth:`drafts.target.runner.TargetRunner._positions_and_mask` (whose per-layer-type rule for
sliding windows is reused, not copied): a real query sees its session's ``c_b`` committed
keys and its own ancestors in the tree; padding keys are never seen; a padding query sees only
itself (so no softmax row is empty). After the pass, each session's *kept* positions (the root
and its accepted path) are appended to its own cache; nothing else of the batch survives.

Exactness: a row's logits match its single-session pass up to float rounding (~1e-6 on the
CPU in fp32; the padded reductions sum in another order), so greedy tokens are identical and
vectors agree to tolerance; bit-equality is not claimed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import DynamicCache

from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession
from drafts.tree import DraftTree


@dataclass(frozen=True)
class BatchRow:
    """One session's part of a batched verify."""

    session: TargetSession
    root_token: int
    tree: DraftTree


@dataclass
class BatchForward:
    """What one batched pass produced, per row (padding already cut away)."""

    logits: list[torch.Tensor]  # (N_b + 1, V) float32
    hidden: list[dict[int, torch.Tensor]]  # layer -> (N_b + 1, H)
    cache: DynamicCache  # every layer (B, n_kv, C + T, hd): the padded past, then the new tokens
    past: int  # C: where the new tokens start in ``cache``


@torch.inference_mode()
def forward_batch(runner: TargetRunner, rows: Sequence[BatchRow], hidden_layers: Sequence[int] = ()) -> BatchForward:
    """Run the target once over every row's [root, tree]."""
    past = max(row.session.length for row in rows)
    width = max(row.tree.size + 1 for row in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long, device=runner.device)  # (B, T)
    positions = torch.zeros(len(rows), width, dtype=torch.long, device=runner.device)  # (B, T)
    for b, row in enumerate(rows):
        n = row.tree.size + 1
        ids[b, :n] = torch.tensor(row.tree.input_ids(row.root_token), device=runner.device)
        positions[b, :n] = row.session.length + torch.tensor(row.tree.depths, device=runner.device)
        positions[b, n:] = row.session.length + torch.arange(n, width, device=runner.device)
    cache = _padded_past([row.session for row in rows], past)
    out = runner.model(
        input_ids=ids,
        position_ids=positions,
        attention_mask=_batch_mask(runner, rows, positions, past),
        cache=cache,
        use_cache=True,
        output_hidden_states=bool(hidden_layers),
    )
    sizes = [row.tree.size + 1 for row in rows]
    logits = [out.logits[b, :n].float() for b, n in enumerate(sizes)]
    hidden = [{i: out.hidden_states[i][b, :n] for i in hidden_layers} for b, n in enumerate(sizes)]
    return BatchForward(logits, hidden, cache, past)


def commit_row(batch: BatchForward, b: int, session: TargetSession, keep: Sequence[int]) -> None:
    """Append row ``b``'s new positions ``keep`` (tree indices, root = 0) to ``session``'s cache."""
    layers = cache_layers(batch.cache)
    index = torch.tensor(list(keep), device=layers[0].keys.device) + batch.past
    for layer_index, layer in enumerate(layers):
        keys = layer.keys[b : b + 1, :, index]  # (1, n_kv, kept, hd)
        values = layer.values[b : b + 1, :, index]  # (1, n_kv, kept, hd)
        session.cache.update(keys, values, layer_index)
    session.length += len(keep)


def _padded_past(sessions: Sequence[TargetSession], past: int) -> DynamicCache:
    """A fresh cache holding every session's committed keys/values, right-padded with zeros to ``past``."""
    if past == 0:
        return DynamicCache()
    template = cache_layers(next(s for s in sessions if s.length > 0).cache)  # shapes for empty sessions
    layers = []
    for index, like in enumerate(template):
        keys, values = [], []
        for session in sessions:
            k, v = _layer_kv(session, index, like.keys)  # (1, n_kv, c, hd)
            pad = (0, 0, 0, past - session.length)  # zeros after the committed positions
            keys.append(F.pad(k, pad))
            values.append(F.pad(v, pad))
        layers.append((torch.cat(keys), torch.cat(values)))  # (B, n_kv, C, hd)
    return DynamicCache(layers)


def _layer_kv(session: TargetSession, index: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if session.length == 0:
        empty = like.new_zeros(1, like.shape[1], 0, like.shape[3])  # (1, n_kv, 0, hd)
        return empty, empty
    layer = cache_layers(session.cache)[index]
    return layer.keys, layer.values


def cache_layers(cache: DynamicCache) -> list[Any]:
    """A cache's per-layer key/value holders (full-attention layers: ``.keys``, ``.values``)."""
    return list(cache.layers)


def _batch_mask(
    runner: TargetRunner, rows: Sequence[BatchRow], positions: torch.Tensor, past: int
) -> torch.Tensor | dict[str, torch.Tensor]:
    """(B, 1, T, C + T) bool masks (a dict by layer type for models mixing full and sliding layers)."""
    width = positions.shape[1]
    device = positions.device
    per_row = []
    for b, row in enumerate(rows):
        n, length = row.tree.size + 1, row.session.length
        visible = torch.zeros(width, past + width, dtype=torch.bool, device=device)  # (T, C + T)
        visible[:n, :length] = True  # the session's committed tokens
        visible[:n, past : past + n] = row.tree.ancestor_mask().to(device)  # its own ancestors
        pad = torch.arange(n, width, device=device)
        visible[pad, past + pad] = True  # a padding query sees itself only
        key_pos = torch.cat([torch.arange(past, device=device), positions[b]])  # (C + T,)
        per_row.append(runner._mask_per_layer_type(visible, positions[b], key_pos))  # the runner's window rule
    if isinstance(per_row[0], dict):
        kinds = per_row[0].keys()
        return {kind: torch.cat([m[kind] for m in per_row if isinstance(m, dict)]) for kind in kinds}
    return torch.cat([m for m in per_row if isinstance(m, torch.Tensor)])  # (B, 1, T, C + T)
