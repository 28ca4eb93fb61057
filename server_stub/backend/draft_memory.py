"""The server-side part of a MoA draft: Layer Self-Attention + mean + Ekv2E, one memory vector per token.

Where to split MoA between the verifier and the user's machine is a bandwidth decision. Per
committed token the draft reads either the target's raw keys/values of every layer or the
memory vector they compress to (measured on the wire by ``drafts/protocol/codec.py``, SmolLM2:
30 layers x 3 KV heads x 64 dims):

    what the server sends per committed token        bytes     at ~4 tokens/round, 10 rounds/s
    raw all-layer KV, float16 "kv" (30 x 384)         23,040    ~7.4 Mbit/s
    raw all-layer KV, int8 + per-row scale            11,640    ~3.7 Mbit/s
    MoA memory, float16 "memory" (576)                 1,152    ~0.4 Mbit/s

**Decision: the server runs LSA + mean + Ekv2E** (``MoADraft.compress``, computed once per
verified token, as the paper's own vLLM fork does in ``post_process_KV``) and sends the 576-dim
memory vector: 20x fewer bytes than float16 KV, which is what makes a 4g or 3g link usable. The
price is that the server must load the client's exact draft checkpoint (the handshake compares
``draft_id``), and the LSA costs a little server compute (a 30-token attention per token). A
client whose draft the server does not hold can still ask for the raw ``"kv"``.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import torch

from drafts.moa.model import MoADraft
from drafts.neural.checkpoint import draft_id, load_draft
from drafts.neural.kinds import compressed_kinds, draft_kind
from drafts.target.runner import TargetRunner
from server_stub.errors import DraftUnsupportedError

CHUNK_TOKENS = 256  # tokens compressed per call: bounds the LSA's working memory on long prefills


class MemoryCompressor:
    """Turns the target's all-layer KV of committed tokens into the MoA draft's memory vectors."""

    def __init__(self, draft: MoADraft, draft_id: str) -> None:
        self.draft = draft.eval()
        self.draft_id = draft_id

    @classmethod
    def load(cls, path: Path, runner: TargetRunner) -> MemoryCompressor:
        """The MoA checkpoint at ``path``, for ``runner``'s target (refused for any other)."""
        draft = load_draft(path, runner)
        if not draft_kind(draft.kind).server_compresses:
            raise DraftUnsupportedError(
                f"{path} is a {draft.kind} draft; --draft-checkpoint takes a MoA checkpoint (a draft with a "
                f"server-side part: {', '.join(compressed_kinds())}); other drafts need no --draft-checkpoint"
            )
        return cls(cast(MoADraft, draft), draft_id(path))

    @torch.inference_mode()
    def __call__(self, kv: torch.Tensor) -> torch.Tensor:
        """(m, L, W) target keys/values -> (m, H) memory vectors."""
        weight = self.draft.Ekv2E.weight
        pieces = [
            self.draft.compress(kv[i : i + CHUNK_TOKENS].to(device=weight.device, dtype=weight.dtype)[None])[0]
            for i in range(0, kv.shape[0], CHUNK_TOKENS)
        ]  # each (chunk, H)
        if not pieces:
            return kv.new_zeros(0, self.draft.cfg.hidden)
        return torch.cat(pieces)
