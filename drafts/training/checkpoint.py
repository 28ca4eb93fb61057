"""Writing draft checkpoints (the trainer's side); reading them is inference's,
:mod:`drafts.neural.checkpoint`, re-exported here for the trainer and older callers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from drafts.neural.base import NeuralDraft
from drafts.neural.checkpoint import (
    CONFIG_FILE,
    FORMAT,
    WEIGHTS_FILE,
    check_fingerprint,
    draft_id,
    load_draft,
    read_meta,
)
from drafts.target.loading import TargetFingerprint


def save_draft(out: Path, model: NeuralDraft, fingerprint: TargetFingerprint, training: dict[str, Any]) -> None:
    """Write the checkpoint atomically (a crash never leaves a half-written one)."""
    out.mkdir(parents=True, exist_ok=True)
    tensors = {k: _storable(v) for k, v in model.state_dict().items()}
    tensors["d2t"] = model.parts.d2t.cpu()
    _atomic(out / WEIGHTS_FILE, lambda tmp: save_file(tensors, str(tmp)))
    meta = {
        "format": FORMAT,
        "kind": model.kind,
        "config": model.config_dict(),
        "draft_vocab": model.parts.draft_vocab,
        "trainable_parameters": model.trainable_parameters(),
        "target": fingerprint.to_dict(),
        "training": training,
    }
    _atomic(out / CONFIG_FILE, lambda tmp: tmp.write_text(json.dumps(meta, indent=2)))


def _storable(t: torch.Tensor) -> torch.Tensor:
    """Float weights are stored in fp16 (half the size; the shipped drafts must stay small).
    Training resumes from the full-precision trainer state, never from this file."""
    t = t.detach().cpu()
    return (t.half() if t.is_floating_point() else t).contiguous()


def _atomic(path: Path, write: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


__all__ = [
    "CONFIG_FILE",
    "FORMAT",
    "WEIGHTS_FILE",
    "check_fingerprint",
    "draft_id",
    "load_draft",
    "read_meta",
    "save_draft",
]
