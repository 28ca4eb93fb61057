"""What a draft reads from the target, declared by the draft and honoured by the runner.

Hidden-state indices follow transformers' ``hidden_states`` list: 0 is the token embeddings,
``i`` the output of decoder layer ``i`` (1-based), and ``L`` (= num_layers) the final, post-norm
hidden state that the LM head reads. KV is the per-layer keys (after RoPE, as cached) and values
of every layer, laid out per token as MoA's Layer Self-Attention expects: for each layer, per KV
head, ``[K_h | V_h]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class ActivationRequest:
    """Which target activations of committed tokens a draft needs."""

    hidden_layers: tuple[int, ...] = ()  # indices into hidden_states (0 = embeddings, L = final)
    all_layer_kv: bool = False  # every layer's K/V per token (MoA's Layer Self-Attention input)

    @property
    def empty(self) -> bool:
        return not self.hidden_layers and not self.all_layer_kv

    def union(self, other: ActivationRequest) -> ActivationRequest:
        layers = tuple(sorted(set(self.hidden_layers) | set(other.hidden_layers)))
        return ActivationRequest(layers, self.all_layer_kv or other.all_layer_kv)


NOTHING = ActivationRequest()


@dataclass
class Activations:
    """Target activations of ``m`` committed tokens."""

    hidden: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> (m, H)
    kv: torch.Tensor | None = None  # (m, L, 2 * n_kv * head_dim)
    memory: torch.Tensor | None = None  # (m, H) MoA memory vectors, when a server compressed the KV already

    def select(self, rows: torch.Tensor | slice) -> Activations:
        """The same activations for a subset of the tokens."""
        kv = None if self.kv is None else self.kv[rows]
        memory = None if self.memory is None else self.memory[rows]
        return Activations({k: v[rows] for k, v in self.hidden.items()}, kv, memory)
