"""The frozen pieces of the target that every draft shares: token embeddings and LM head.

They are never trained and never saved with a draft. A draft may use a reduced vocabulary
(frequency-ranked target tokens, as FR-Spec and EAGLE-3 do): ``d2t`` maps draft ids to target
ids and only those rows of the LM head are computed when drafting. Verification always uses the
target's full vocabulary, so the output distribution is unchanged.

``head`` optionally replaces the fp32 product with a module over the same rows (the int8 head of
:mod:`drafts.neural.quantize`); ``head_weight`` stays the reference the rest of the code reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


@dataclass
class TargetParts:
    embed: nn.Embedding  # the target's token embedding (frozen)
    head_weight: torch.Tensor  # (Dv, H) the LM head rows of the draft vocabulary (frozen)
    d2t: torch.Tensor  # (Dv,) target id of each draft id
    vocab_size: int  # the target's full vocabulary V
    embed_scale: float = 1.0  # Gemma scales embeddings by sqrt(H)
    source: Any = field(default=None, repr=False, compare=False)  # the HF model (TLI reuses its last layers)
    head: nn.Module | None = field(default=None, repr=False, compare=False)  # replaces ``h @ head_weight.T``

    @classmethod
    def from_model(cls, model: Any, d2t: torch.Tensor | None = None) -> TargetParts:
        """Take the parts from a Hugging Face causal LM (``d2t`` None: the full vocabulary)."""
        config = model.config.get_text_config()
        embed = model.get_input_embeddings()
        head = model.get_output_embeddings().weight
        if d2t is None:
            d2t = torch.arange(head.shape[0])
        d2t = d2t.to(head.device)
        scale = float(getattr(embed, "embed_scale", 1.0)) if hasattr(embed, "embed_scale") else 1.0
        return cls(embed, head.detach()[d2t], d2t, int(config.vocab_size), scale, model)

    def __deepcopy__(self, memo: dict[int, Any]) -> TargetParts:
        return self  # frozen and shared: a copied draft shares its target's parts (never copies the target)

    @property
    def hidden(self) -> int:
        return int(self.head_weight.shape[1])

    @property
    def draft_vocab(self) -> int:
        return int(self.head_weight.shape[0])

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """(...,) target ids -> (..., H) frozen embeddings."""
        with torch.no_grad():
            return self.embed(ids) * self.embed_scale

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """(..., H) -> (..., Dv) draft-vocabulary logits through the frozen LM head rows."""
        if self.head is not None:
            return self.head(h)
        return h @ self.head_weight.T

    def to_target_ids(self, draft_ids: torch.Tensor) -> torch.Tensor:
        return self.d2t[draft_ids]

    def to_full_vocab(self, q: torch.Tensor) -> torch.Tensor:
        """(..., Dv) draft-vocabulary probabilities -> (..., V), zero outside the draft vocabulary."""
        full = q.new_zeros(*q.shape[:-1], self.vocab_size)
        return full.index_copy_(-1, self.d2t, q) if q.dim() == 1 else full.index_copy_(q.dim() - 1, self.d2t, q)
