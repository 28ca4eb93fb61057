"""The target runner: any Hugging Face causal LM behind the few verbs speculative decoding needs.

``extend`` runs the model over new tokens (a prompt, one token, a chain, or a token tree under
an ancestor mask) appending their keys/values to the session's cache; ``commit`` keeps the
accepted positions, compacts the cache, and returns the activations the draft declared.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence

from drafts.errors import ContextOverflowError
from drafts.target.activations import NOTHING, ActivationRequest, Activations
from drafts.target.chat import format_chat, stop_token_ids
from drafts.target.growing_cache import GrowingCache
from drafts.target.loading import LoadedTarget, context_length
from drafts.target.session import TargetSession, per_token_kv
from drafts.tree import DraftTree


class TargetRunner:
    """Runs one loaded target model for any number of sessions (batch size 1 each)."""

    def __init__(self, loaded: LoadedTarget) -> None:
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.fingerprint = loaded.fingerprint
        self.linear = loaded.linear  # packed | dense: what is compared with its greedy output must match
        self.config = self.model.config.get_text_config()
        self.device = next(self.model.parameters()).device
        self.dtype = next(self.model.parameters()).dtype
        self.num_layers = int(self.config.num_hidden_layers)
        self.context_length = context_length(self.model)
        self.stop_ids = stop_token_ids(self.tokenizer, self.model.generation_config.eos_token_id)

    # -- text -----------------------------------------------------------------------------
    def format_chat(self, turns: Sequence[Any]) -> list[int]:
        return format_chat(self.tokenizer, turns)

    def decode(self, tokens: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(tokens), skip_special_tokens=True))

    # -- model ----------------------------------------------------------------------------
    def new_session(self) -> TargetSession:
        return TargetSession()

    @torch.inference_mode()
    def extend(
        self,
        session: TargetSession,
        tokens: Sequence[int],
        request: ActivationRequest = NOTHING,
        tree: DraftTree | None = None,
        last_only: bool = False,
    ) -> torch.Tensor:
        """Run the target over ``tokens`` (a tree's [root, nodes] when ``tree`` is given).

        Returns logits (n, V), or (1, V) for the last position when ``last_only``.
        """
        if session.pending:
            raise RuntimeError("commit() the previous extend() before extending again")
        n, start = len(tokens), session.length
        self._check_room(start + n)
        ids = torch.tensor([list(tokens)], device=self.device)  # (1, n)
        kwargs: dict[str, Any] = {"logits_to_keep": 1 if last_only else 0}
        if tree is not None and not tree.is_chain:  # plain/chain: the model's own causal positions are right
            kwargs["position_ids"], kwargs["attention_mask"] = self._positions_and_mask(start, n, tree)
        if request.hidden_layers:  # asking for nothing is measurably faster than asking for False
            kwargs["output_hidden_states"] = True
        out = self.model(input_ids=ids, cache=session.cache, use_cache=True, **kwargs)
        session.pending = n
        session.pending_hidden = {i: out.hidden_states[i][0] for i in request.hidden_layers}
        return out.logits[0].float()

    def commit(
        self, session: TargetSession, keep: Sequence[int] | None = None, request: ActivationRequest = NOTHING
    ) -> Activations:
        """Keep pending positions ``keep`` (all if None) and return their declared activations."""
        if keep is None and request.empty:  # the autoregressive fast path
            session.length, session.pending, session.pending_hidden = session.length + session.pending, 0, {}
            return Activations()
        kept = list(range(session.pending)) if keep is None else list(keep)
        index = torch.tensor(kept, device=self.device)
        hidden = {i: h[index] for i, h in session.pending_hidden.items() if i in request.hidden_layers}
        session.keep_pending(kept)
        session.pending_hidden = {}
        kv = session.tail_kv(len(kept)) if request.all_layer_kv else None
        return Activations(hidden, kv)

    @torch.inference_mode()
    def prefill_activations(self, sequences: Sequence[Sequence[int]], request: ActivationRequest) -> list[Activations]:
        """The declared activations at every position of each sequence, run from scratch as one
        right-padded batch (training: many sequences per forward). Causal attention keeps each
        sequence's positions blind to the padding after them, so its activations are its own alone's
        (equal up to the rounding of a different batch shape)."""
        lengths = [len(tokens) for tokens in sequences]
        self._check_room(max(lengths))
        rows = [torch.tensor(list(tokens)) for tokens in sequences]
        ids = pad_sequence(rows, batch_first=True).to(self.device)  # (B, T), 0-padded: one copy to the device
        cache = GrowingCache()
        kwargs: dict[str, Any] = {"output_hidden_states": True} if request.hidden_layers else {}
        out = self.model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1, **kwargs)
        layers: list[Any] = list(cache.layers)  # full-length layers (GrowingLayer): .keys, .values
        kv = per_token_kv([(layer.keys, layer.values) for layer in layers]) if request.all_layer_kv else None
        return [
            Activations(
                {i: out.hidden_states[i][b, :n] for i in request.hidden_layers},  # (n, H) each
                None if kv is None else kv[b, :n],  # (n, L, W)
            )
            for b, n in enumerate(lengths)
        ]

    # -- masks ----------------------------------------------------------------------------
    def _positions_and_mask(
        self, start: int, n: int, tree: DraftTree | None
    ) -> tuple[torch.Tensor, torch.Tensor | dict[str, torch.Tensor] | None]:
        if tree is None or tree.is_chain:
            return torch.arange(start, start + n, device=self.device)[None], None
        depths, ancestors = _tree_layout(tree.parents)
        positions = start + depths.to(self.device)  # (n,)
        visible = torch.ones(n, start + n, dtype=torch.bool, device=self.device)  # (n, start + n)
        visible[:, start:] = ancestors.to(self.device)
        key_pos = torch.cat([torch.arange(start, device=self.device), positions])  # (start + n,)
        return positions[None], self._mask_per_layer_type(visible, positions, key_pos)

    def _mask_per_layer_type(
        self, visible: torch.Tensor, q_pos: torch.Tensor, k_pos: torch.Tensor
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """(1, 1, n, S) bool masks; a dict by layer type for models mixing full and sliding layers."""
        window = getattr(self.config, "sliding_window", None)
        sliding = visible & ((q_pos[:, None] - k_pos[None, :]) < window) if window else visible
        layer_types = getattr(self.config, "layer_types", None)
        if layer_types:
            masks = {"full_attention": visible, "sliding_attention": sliding}
            return {kind: masks[kind][None, None] for kind in set(layer_types)}
        return sliding[None, None]

    def _check_room(self, total: int) -> None:
        if total > self.context_length:
            raise ContextOverflowError(
                f"{total} tokens exceed {self.fingerprint.name}'s context of {self.context_length}; "
                "shorten the prompt or lower --max-new-tokens"
            )


@lru_cache(maxsize=64)
def _tree_layout(parents: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Depths (n,) and ancestor mask (n, n) of a tree shape, built once per shape (drafters reuse a few)."""
    tree = DraftTree(tuple(0 for _ in parents), parents)
    return torch.tensor(tree.depths), tree.ancestor_mask()
