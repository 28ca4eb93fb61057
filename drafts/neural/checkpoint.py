"""Reading draft checkpoints for inference: ``config.json`` (kind, sizes, the target's
fingerprint, how it was trained) and ``draft.safetensors`` (trainable weights + vocabulary map).

A checkpoint loads only against the target it was trained for; anything else is refused with a
message naming both targets. ``config.json`` alone is read by :mod:`drafts.neural.checkpoint_meta`
(torch-free, also used by ``moa-chat``'s settings; re-exported here). Writing one is the
trainer's (:mod:`drafts.training.checkpoint`, which imports this module; loading a draft never
imports the training package).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from safetensors.torch import load_file

from drafts.errors import CheckpointError
from drafts.neural.base import NeuralDraft
from drafts.neural.checkpoint_meta import CONFIG_FILE, FORMAT, WEIGHTS_FILE, read_meta
from drafts.neural.kinds import draft_kind
from drafts.neural.target_parts import TargetParts
from drafts.target.loading import TargetFingerprint
from drafts.target.runner import TargetRunner


def load_draft(path: Path, runner: TargetRunner, int8_on_cpu: bool = False) -> NeuralDraft:
    """Load a checkpoint for ``runner``'s target (refusing one trained for another). ``int8_on_cpu``:
    on a CPU in float32, quantize its Linear layers and LM head to int8 (a drafted token costs about a
    third; proposals change, verification does not, so T=0 output stays the target's)."""
    meta = read_meta(path)
    check_fingerprint(path, TargetFingerprint.from_dict(meta["target"]), runner.fingerprint)
    try:
        tensors = load_file(str(path / WEIGHTS_FILE))
    except (FileNotFoundError, SafetensorError, OSError) as exc:
        raise CheckpointError(
            f"cannot read {path / WEIGHTS_FILE}: {exc}; the checkpoint is incomplete or corrupt"
        ) from exc
    parts = TargetParts.from_model(runner.model, tensors.pop("d2t"))
    model = draft_kind(meta["kind"]).build(meta["config"], parts)
    try:  # strict=False: missing/unexpected names become the CheckpointError below, not a RuntimeError
        missing, unexpected = model.load_state_dict(tensors, strict=False)
    except RuntimeError as exc:  # same names, other shapes: the config.json does not match the weights
        raise CheckpointError(f"{path}: weights do not match its {CONFIG_FILE} ({exc}); retrain or restore it") from exc
    if missing or unexpected:
        raise CheckpointError(
            f"{path}: weights do not match a {meta['kind']} draft (missing {missing}, unexpected {unexpected})"
        )
    model = model.to(device=runner.device, dtype=runner.dtype).eval()
    return apply_inference_options(path, model, meta, int8_on_cpu)


def apply_inference_options(
    path: Path, model: NeuralDraft, meta: dict[str, Any], int8_on_cpu: bool = False
) -> NeuralDraft:
    """What config.json's ``"inference"`` asks of a loaded draft (``drafts.neural.derive`` writes it):
    ``{"quantize": "int8-dynamic"}`` quantizes its Linear layers and LM head rows; ``int8_on_cpu``
    asks the same of any draft that runs on a CPU in float32 (the client's choice, not the file's)."""
    from drafts.neural.quantize import INT8, quantizable, quantize_int8

    quantize = meta.get("inference", {}).get("quantize")
    if quantize is None and int8_on_cpu and quantizable(model):
        quantize = INT8
    if quantize is None:
        return model
    if quantize != INT8:
        raise CheckpointError(f"{path / CONFIG_FILE} asks for quantization {quantize!r}; this version knows {INT8!r}")
    return quantize_int8(model)


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


__all__ = [
    "CONFIG_FILE",
    "FORMAT",
    "WEIGHTS_FILE",
    "apply_inference_options",
    "check_fingerprint",
    "draft_id",
    "load_draft",
    "read_meta",
]
