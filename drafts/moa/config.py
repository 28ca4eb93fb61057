"""Sizes of a MoA draft, derived from its target and chosen for the device it runs on."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from drafts.errors import ConfigError


@dataclass(frozen=True)
class MoAConfig:
    target_layers: int  # L: Layer Self-Attention attends across all of them
    kv_width: int  # 2 * n_kv * head_dim: one layer's keys+values per token (LSA width)
    hidden: int  # H: the target's width; SA/CA run at it (frozen embeddings in, LM head out)
    lsa_heads: int  # LSA query heads (head_dim 64 when kv_width allows)
    lsa_kv_heads: int
    lsa_intermediate: int  # LSA SwiGLU width (kept small: LSA runs over L layer tokens per token)
    heads: int  # SA and CA query heads
    kv_heads: int
    intermediate: int  # SA and CA SwiGLU width
    staircase: bool = True  # anneal the staircase self-attention mask away by mid-training
    tli_layers: int = 0  # Target Layer Inference N: the target's last N layers turn the output into logits
    lsa_layers: int = 0  # target layers LSA reads, evenly spaced, the last included (0: all L, the paper's)
    final_hidden: bool = False  # the memory also gets the target's final hidden state (EAGLE's feature), projected
    # Training only (inference is the same function whatever they are; recorded so a run's masks are known):
    period_min: int = 6  # verification period k ~ U{period_min..period_max} per sequence (official: 6..14);
    period_max: int = 14  # depth d is trained on ~1/k of the response positions, so shorter k favours depth 1
    depth0: bool = False  # official code: verified positions read their own target state (depths 0..k-1, not 1..k)

    def __post_init__(self) -> None:
        if not 0 <= self.tli_layers < self.target_layers:
            raise ConfigError(
                f"--tli {self.tli_layers}: the target has {self.target_layers} layers; choose 0 <= N < that"
            )
        if not 1 <= self.period_min <= self.period_max:
            raise ConfigError(
                f"--verify-period {self.period_min}-{self.period_max}: give LO-HI with 1 <= LO <= HI (official: 6-14)"
            )
        if not 0 <= self.lsa_layers <= self.target_layers:
            raise ConfigError(
                f"--lsa-layers {self.lsa_layers}: the target has {self.target_layers} layers; "
                "choose 1 to that many (0: all of them)"
            )
        for width, heads, kv in (
            (self.kv_width, self.lsa_heads, self.lsa_kv_heads),
            (self.hidden, self.heads, self.kv_heads),
        ):
            if width % heads or heads % kv:
                raise ConfigError(f"width {width} with {heads} heads / {kv} kv heads does not divide evenly")

    def lsa_layer_indices(self) -> tuple[int, ...]:
        """The target layers whose keys/values LSA reads: ``lsa_layers`` of them evenly spaced
        over the depth, ending at the last layer (all L when ``lsa_layers`` is 0)."""
        L, n = self.target_layers, self.lsa_layers or self.target_layers
        return tuple(round((k + 1) * L / n) - 1 for k in range(n))

    @classmethod
    def for_target(
        cls,
        layers: int,
        kv_width: int,
        hidden: int,
        intermediate: int = 768,
        lsa_intermediate: int = 512,
        tli_layers: int = 0,
    ) -> MoAConfig:
        lsa_heads = max(1, kv_width // 64)
        heads = max(1, hidden // 64)
        return cls(
            target_layers=layers,
            kv_width=kv_width,
            hidden=hidden,
            lsa_heads=lsa_heads,
            lsa_kv_heads=_kv_heads(lsa_heads),
            lsa_intermediate=lsa_intermediate,
            heads=heads,
            kv_heads=_kv_heads(heads),
            intermediate=intermediate,
            tli_layers=tli_layers,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _kv_heads(heads: int) -> int:
    """A third of the heads when possible (grouped-query attention), else all."""
    for kv in (3, 2):
        if heads % kv == 0 and heads > kv:
            return heads // kv
    return heads
