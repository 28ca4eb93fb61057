"""What every trained draft (MoA, EAGLE, independent) provides to the trainer and the drafter.

Training: ``predict`` runs the draft over a whole sequence in parallel (simulating decoding
with masks) and returns its prediction of the target's final hidden state at every position;
the shared loss in :mod:`drafts.training.losses` compares it with the target's.

Inference: ``observe`` takes the tokens the target committed (with the activations the draft
declared in ``needs``) into the draft's own caches; ``step`` drafts from new tokens at given
positions, each seeing the committed context plus its ancestors among the scratch tokens of
this round; ``end_round`` drops the scratch tokens; ``truncate`` cuts the committed ones back to a prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from drafts.errors import ConfigError
from drafts.neural.kinds import compressed_kinds
from drafts.neural.target_parts import TargetParts
from drafts.target.activations import ActivationRequest, Activations

DRAFT_ROPE_THETA = 10_000.0  # the draft's own attention positions (independent of the target's)


@dataclass
class TrainBatch:
    """One training batch with the target's activations (no gradient flows into them)."""

    ids: torch.Tensor  # (B, T) token ids
    loss_mask: torch.Tensor  # (B, T) bool, True on assistant tokens
    target_hidden: torch.Tensor  # (B, T, H) target's final post-norm hidden (predicts x_{t+1})
    target_kv: torch.Tensor | None = None  # (B, T, L, kv_width) all-layer keys/values (MoA)
    target_tail_input: torch.Tensor | None = None  # (B, T, H) hidden_states[tail_input_layer] (MoA TLI)


class NeuralDraft(nn.Module):
    """Base of the trained drafts; subclasses define the architecture."""

    kind: str = "?"
    needs: ActivationRequest
    tail_input_layer: int | None = None  # hidden index the draft also predicts (MoA TLI: L - N), for the loss
    aligns_context: bool = False  # has HASS context alignment (predict_aligned): it reads its own predictions

    def __init__(self, parts: TargetParts) -> None:
        super().__init__()
        object.__setattr__(self, "parts", parts)  # shared and frozen: not a submodule, never saved

    parts: TargetParts

    # -- training ------------------------------------------------------------------------
    def predict(self, batch: TrainBatch, progress: float, generator: torch.Generator | None) -> torch.Tensor:
        """(B, T, H) prediction of the target's final hidden state at every position."""
        raise NotImplementedError

    def predict_features(
        self, batch: TrainBatch, progress: float, generator: torch.Generator | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``predict`` plus, when ``tail_input_layer`` is set, the (B, T, H) prediction of that
        hidden state (the loss compares it with ``batch.target_tail_input``)."""
        return self.predict(batch, progress, generator), None

    def predict_aligned(
        self, batch: TrainBatch, progress: float, generator: torch.Generator | None, steps: int
    ) -> list[torch.Tensor]:
        """HASS context alignment (``moa-train --align-steps``): ``steps`` (B, T, H) predictions, step
        j's inputs at the last j-1 positions being the draft's own earlier outputs, as at inference.
        Only drafts that feed their own predictions back (EAGLE) have it."""
        raise ConfigError(
            f"--align-steps {steps}: a {self.kind} draft never reads its own predicted features, so there is "
            "no context to align (one training pass already matches inference); use --align-steps 1"
        )

    # -- inference -----------------------------------------------------------------------
    def memory_compressible(self) -> bool:
        """Whether the verifier may send this draft its kind's compressed memory (one vector per
        committed token) instead of the raw activations in ``needs``: the kind declares it
        (:mod:`drafts.neural.kinds`; an undeclared one, a test double say, never is), and a model
        whose config reads more may opt out."""
        return self.kind in compressed_kinds()

    def reset(self) -> None:
        raise NotImplementedError

    def observe(self, committed: list[int], start: int, acts: Activations) -> None:
        """Take ``committed`` tokens at positions start.. (their target activations) into the caches."""
        raise NotImplementedError

    def step(
        self, tokens: torch.Tensor, positions: torch.Tensor, scratch_mask: torch.Tensor | None, state: Any
    ) -> tuple[torch.Tensor, Any]:
        """Draft from ``tokens`` (n,) at ``positions`` (n,): -> (draft logits (n, Dv), new state).

        ``scratch_mask`` (n, S) says which scratch tokens of this round (the new ones included,
        last) each new token sees; None means all of them (a chain). ``state`` is per-token
        recurrent state of the parents (EAGLE's predicted features) or None.
        """
        raise NotImplementedError

    def end_round(self) -> None:
        """Forget this round's scratch tokens."""
        raise NotImplementedError

    def truncate(self, length: int) -> None:
        """Forget the committed tokens from position ``length`` on (a conversation rewound to a
        common prefix): the caches then hold what observing only the first ``length`` gives."""
        raise NotImplementedError

    def initial_state(self) -> Any:
        """The state the first step of a round starts from (the root's parent)."""
        return None

    def config_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
