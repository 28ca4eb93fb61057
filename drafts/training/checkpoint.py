"""Draft checkpoints: ``draft.safetensors`` (trainable weights + vocabulary map) and
``config.json`` (kind, sizes, the target's fingerprint, how it was trained).

A checkpoint loads only against the target it was trained for; anything else is refused with a
message naming both targets.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from drafts.errors import CheckpointError
from drafts.neural.base import NeuralDraft
from drafts.neural.factory import build_draft
from drafts.neural.target_parts import TargetParts
from drafts.target.loading import TargetFingerprint
from drafts.target.runner import TargetRunner

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "draft.safetensors"
FORMAT = 1


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


def read_meta(path: Path) -> dict[str, Any]:
    config = path / CONFIG_FILE
    if not config.is_file():
        raise CheckpointError(
            f"no draft checkpoint at {path} (missing {CONFIG_FILE}); train one with "
            "`moa-train --draft moa --out DIR` or pass the directory of an existing one"
        )
    try:
        meta: dict[str, Any] = json.loads(config.read_text())
    except json.JSONDecodeError as exc:
        raise CheckpointError(
            f"{config} is not valid JSON ({exc}); the checkpoint is corrupt, retrain or restore it"
        ) from exc
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{config} has format {meta.get('format')!r}, this version reads {FORMAT}")
    return meta


def load_draft(path: Path, runner: TargetRunner) -> NeuralDraft:
    """Load a checkpoint for ``runner``'s target (refusing one trained for another)."""
    meta = read_meta(path)
    check_fingerprint(path, TargetFingerprint.from_dict(meta["target"]), runner.fingerprint)
    try:
        tensors = load_file(str(path / WEIGHTS_FILE))
    except (FileNotFoundError, SafetensorError, OSError) as exc:
        raise CheckpointError(
            f"cannot read {path / WEIGHTS_FILE}: {exc}; the checkpoint is incomplete or corrupt"
        ) from exc
    parts = TargetParts.from_model(runner.model, tensors.pop("d2t"))
    model = build_draft(meta["kind"], meta["config"], parts)
    try:  # strict=False: missing/unexpected names become the CheckpointError below, not a RuntimeError
        missing, unexpected = model.load_state_dict(tensors, strict=False)
    except RuntimeError as exc:  # same names, other shapes: the config.json does not match the weights
        raise CheckpointError(f"{path}: weights do not match its {CONFIG_FILE} ({exc}); retrain or restore it") from exc
    if missing or unexpected:
        raise CheckpointError(
            f"{path}: weights do not match a {meta['kind']} draft (missing {missing}, unexpected {unexpected})"
        )
    return model.to(device=runner.device, dtype=runner.dtype).eval()


def draft_id(path: Path) -> str:
    """The draft's identity on the wire (``Hello.draft_id``): its kind and a hash of its weights file.

    The client and the verifier compare it when the server runs part of the draft (MoA's memory).
    """
    meta = read_meta(path)
    digest = hashlib.sha256()
    try:
        with open(path / WEIGHTS_FILE, "rb") as weights:
            for chunk in iter(lambda: weights.read(2**20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise CheckpointError(f"cannot read {path / WEIGHTS_FILE}: {exc}; the checkpoint is incomplete") from exc
    return f"{meta['kind']}-{digest.hexdigest()[:16]}"


def check_fingerprint(path: Path, trained: TargetFingerprint, loaded: TargetFingerprint) -> None:
    if trained != loaded:
        raise CheckpointError(
            f"draft {path} was trained for target {trained.name} ({trained.num_layers} layers, hidden "
            f"{trained.hidden_size}, tokenizer {trained.tokenizer_hash}) but the loaded target is {loaded.name} "
            f"({loaded.num_layers} layers, hidden {loaded.hidden_size}, tokenizer {loaded.tokenizer_hash}); "
            f"load the matching target or train a draft for this one with `moa-train --target ...`"
        )


def _storable(t: torch.Tensor) -> torch.Tensor:
    """Float weights are stored in fp16 (half the size; the shipped drafts must stay small).
    Training resumes from the full-precision trainer state, never from this file."""
    t = t.detach().cpu()
    return (t.half() if t.is_floating_point() else t).contiguous()


def _atomic(path: Path, write: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


__all__ = ["check_fingerprint", "draft_id", "load_draft", "read_meta", "save_draft"]
