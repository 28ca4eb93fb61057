"""Target Layer Inference (MoA §(e)): the target's own last N decoder layers as the draft's tail.

With N > 0 the draft predicts ``hidden_states[L - N]``, the input of the target's last N decoder
layers; those layers (frozen, the target's weights), then the target's final norm, turn it into
the final hidden state the LM head reads. The layers are re-implemented here over the target's
own submodules (norms, projections, MLP, rotary embedding: exactly the target's cos/sin, RoPE
scaling included) because the draft needs one thing the Hugging Face layer cannot take: a key
set that mixes the target's cached keys/values with the draft's own.

Supported: the Llama family's decoder layer (Llama/SmolLM2, Qwen2 with q/k/v biases, Mistral
with its sliding window): RMSNorm -> q/k/v -> RoPE -> grouped-query attention -> o_proj ->
residual -> RMSNorm -> SwiGLU -> residual. Other layouts (Gemma 3's q/k norms and sandwich
norms, ...) are refused with a ConfigError.

``TargetTail`` is a plain object holding references to the target's modules: it is never a
submodule of a draft, so it is never trained, initialised, moved or saved with one.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from drafts.errors import ConfigError
from drafts.nn.kv_cache import KVCache

SUPPORTED = ("llama", "qwen2", "mistral")  # Llama-family decoder layers (model_type)


def split_kv(kv: torch.Tensor, n_kv: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer's target keys/values (B, T, W), per KV head ``[K_h | V_h]``, -> each (B, n_kv, T, hd).

    The layout is :mod:`drafts.target.activations`'; keys are after RoPE, as cached.
    """
    B, T, W = kv.shape
    kv = kv.reshape(B, T, n_kv, 2, W // (2 * n_kv)).permute(3, 0, 2, 1, 4)  # (2, B, n_kv, T, hd)
    return kv[0], kv[1]


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Llama's RoPE on ``x`` (B, nh, T, hd) with the target's tables (B or 1, T, hd)."""
    cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, hd)
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


class TailLayer:
    """One frozen target decoder layer whose keys may be prefixed by other keys (the target's own)."""

    def __init__(self, layer: Any, config: Any) -> None:
        self.layer = layer
        attn = layer.self_attn
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(getattr(config, "num_key_value_heads", None) or self.heads)
        self.scaling = float(attn.scaling)
        window = getattr(attn, "sliding_window", None)  # Qwen2: per layer type
        if config.model_type == "mistral":  # Mistral slides every layer (the model builds the mask)
            window = getattr(config, "sliding_window", None)
        self.window: int | None = int(window) if window else None

    def project_kv(self, h: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys (after RoPE) and values of normed inputs ``h`` (B, T, H) -> each (B, n_kv, T, hd)."""
        B, T, _ = h.shape
        attn = self.layer.self_attn
        k = attn.k_proj(h).view(B, T, self.kv_heads, -1).transpose(1, 2)  # (B, n_kv, T, hd)
        v = attn.v_proj(h).view(B, T, self.kv_heads, -1).transpose(1, 2)  # (B, n_kv, T, hd)
        return _rotate(k, *rope), v

    def windowed(self, visible: torch.Tensor | None, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor | None:
        """``visible`` (B or 1, 1, T, S) narrowed to this layer's sliding window, as the target's mask."""
        if self.window is None:
            return visible
        near = ((q_pos[:, None] - k_pos[None, :]) < self.window)[None, None]  # (1, 1, T, S)
        return near if visible is None else visible & near

    def __call__(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        mask: torch.Tensor | None,
        context: tuple[torch.Tensor, torch.Tensor] | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """``x`` (B, T, H) through the layer; its keys/values go after ``context``'s (B, n_kv, S, hd)
        or are appended to ``cache``; ``mask`` (B or 1, 1, T, S + T) over all of them."""
        layer, attn = self.layer, self.layer.self_attn
        B, T, _ = x.shape
        h = layer.input_layernorm(x)
        k, v = self.project_kv(h, rope)  # (B, n_kv, T, hd)
        if cache is not None:
            k, v = cache.append(k, v)
        if context is not None:
            k, v = torch.cat([context[0], k], dim=2), torch.cat([context[1], v], dim=2)  # (B, n_kv, S + T, hd)
        q = _rotate(attn.q_proj(h).view(B, T, self.heads, -1).transpose(1, 2), *rope)  # (B, nh, T, hd)
        groups = self.heads // self.kv_heads
        if groups > 1:
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)  # (B, nh, S, hd)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scaling)  # (B, nh, T, hd)
        x = x + attn.o_proj(y.transpose(1, 2).reshape(B, T, -1))
        return x + layer.mlp(layer.post_attention_layernorm(x))


class TargetTail:
    """The target's last N decoder layers + final norm, frozen (references, never copies)."""

    def __init__(self, model: Any, n: int) -> None:
        config = model.config.get_text_config()
        _check_supported(config, n)
        decoder = model.get_decoder()
        self.first = int(config.num_hidden_layers) - n  # hidden_states index of the tail's input
        self.layers = [TailLayer(layer, config) for layer in decoder.layers[self.first :]]
        self.norm = decoder.norm
        self.rotary = decoder.rotary_emb
        self.dtype = next(decoder.norm.parameters()).dtype

    def __deepcopy__(self, memo: dict[int, Any]) -> TargetTail:
        return self  # frozen references to the target: a copied draft shares them

    @property
    def kv_heads(self) -> int:
        return self.layers[0].kv_heads

    def rope(self, positions: torch.Tensor, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The target's own cos, sin for ``positions`` (B or 1, T) -> each (B or 1, T, hd)."""
        cos, sin = self.rotary(like, positions)
        return cos, sin

    def true_kv(self, kv: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The tail layers' target keys/values from the all-layer ``kv`` (B, T, L, W): each (B, n_kv, T, hd)."""
        return [split_kv(kv[:, :, self.first + t], self.kv_heads) for t in range(len(self.layers))]

    def parallel(self, x: torch.Tensor, kv: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """Training: predicted inputs ``x`` (B, T, H) -> final post-norm hidden (B, T, H) in one pass.

        Query ``i`` attends, in every tail layer, to the target's true keys/values at ``j <=
        starts[i]`` (verified, as cached at inference) and to keys/values of the draft's own
        predicted inputs at ``starts[i] < j <= i`` (this round's drafted tokens): keys are
        ``[true (T) | predicted (T)]`` under a (T, 2T) mask.
        """
        B, T, _ = x.shape
        x = x.to(self.dtype)
        pos = torch.arange(T, device=x.device)
        rope = self.rope(pos[None], x)
        seen = pos[None, None, :] <= starts[:, :, None]  # (B, T, T): verified, the target's own K/V
        own = ~seen & (pos[None, None, :] <= pos[None, :, None])  # (B, T, T): drafted, the draft's K/V
        visible = torch.cat([seen, own], dim=-1)[:, None]  # (B, 1, T, 2T)
        key_pos = torch.cat([pos, pos])  # (2T,)
        for layer, context in zip(self.layers, self.true_kv(kv), strict=True):
            x = layer(x, rope, layer.windowed(visible, pos, key_pos), context=context)
        return self.norm(x)

    def incremental(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        visible: torch.Tensor | None,
        key_pos: torch.Tensor,
        caches: list[KVCache],
    ) -> torch.Tensor:
        """Inference: drafted inputs ``x`` (1, n, H) at ``positions`` (n,) over ``caches`` (committed
        target K/V, then this round's scratch K/V, to which theirs are appended) -> (1, n, H).

        ``visible`` (1, 1, n, S) or None (all) and ``key_pos`` (S,) cover the caches after the append.
        """
        x = x.to(self.dtype)
        rope = self.rope(positions[None], x)
        for layer, cache in zip(self.layers, caches, strict=True):
            x = layer(x, rope, layer.windowed(visible, positions, key_pos), cache=cache)
        return self.norm(x)


def _check_supported(config: Any, n: int) -> None:
    kind = str(getattr(config, "model_type", "?"))
    if kind not in SUPPORTED:
        raise ConfigError(
            f"Target Layer Inference (--tli {n}) reuses Llama-family decoder layers ({', '.join(SUPPORTED)}); "
            f"the target's architecture {kind!r} is not one of them (e.g. Gemma 3 adds q/k norms and "
            "sandwich norms); train this target's MoA draft with --tli 0"
        )
    if not 0 < n < int(config.num_hidden_layers):
        layers = int(config.num_hidden_layers)
        raise ConfigError(f"--tli {n}: a tail reuses 1 to {layers - 1} of the target's {layers} layers")
