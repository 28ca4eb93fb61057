"""The client's half of speculative decoding: the draft, and what it knows of the target it drafts for.

A trained draft shares the target's frozen embeddings and LM head (:mod:`drafts.neural.target_parts`),
so the client loads the target's weights once for them and for the tokenizer; only the remote
verifier runs the target's layers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from drafts.neural.checkpoint import draft_id, load_draft
from drafts.neural.drafter import NeuralDrafter
from drafts.protocol import Needs
from drafts.protocol.vectors import MEMORY
from drafts.target.device import default_dtype, resolve_device
from drafts.target.loading import TargetFingerprint, load_target
from drafts.target.runner import TargetRunner


@dataclass(frozen=True)
class ClientDraft:
    drafter: NeuralDrafter  # MoA, EAGLE or independent; declares the activations it needs
    draft_id: str  # Hello.draft_id: the verifier computes MoA memory only for this exact checkpoint
    target: TargetFingerprint  # Hello.target: the model the draft was trained for
    stop_ids: frozenset[int]  # the target's end-of-turn tokens
    decode: Callable[[Sequence[int]], str]  # token ids -> text (stop strings)
    tokenizer: Any = None  # the target's tokenizer: renders a chat (drafts.target.chat.format_chat)

    @classmethod
    def load(
        cls, checkpoint: Path, target: str | None = None, device: str = "auto", int8_on_cpu: bool = False
    ) -> ClientDraft:
        """The draft at ``checkpoint`` for ``target`` (default: the bundled SmolLM2) on ``device``;
        ``int8_on_cpu``: int8 layers when that is a CPU (:func:`~drafts.neural.checkpoint.load_draft`)."""
        where = resolve_device(device)
        runner = TargetRunner(load_target(target, where, default_dtype(where)))
        return cls.of(NeuralDrafter(load_draft(checkpoint, runner, int8_on_cpu)), draft_id(checkpoint), runner)

    @classmethod
    def of(cls, drafter: NeuralDrafter, draft_id: str, runner: TargetRunner) -> ClientDraft:
        return cls(drafter, draft_id, runner.fingerprint, runner.stop_ids, runner.decode, runner.tokenizer)

    @property
    def device(self) -> torch.device:
        return self.drafter.model.parts.head_weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.drafter.model.parts.head_weight.dtype

    def needs(self, compressed: bool) -> Needs:
        """What to ask the verifier for: MoA's memory vectors when ``compressed``, else the raw activations."""
        if compressed and self.wants_memory:
            return Needs(compressed=MEMORY)
        return Needs.of(self.drafter.needs)

    @property
    def wants_memory(self) -> bool:
        """Whether the verifier can compress what the draft reads to one vector per token (MoA's memory;
        the kind declares it, and the model may opt out: MoA with Target Layer Inference reads raw KV)."""
        return self.drafter.model.memory_compressible()
