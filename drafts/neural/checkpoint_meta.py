"""A draft checkpoint's ``config.json``, read without torch: its format, kind and target.

The one reader of checkpoint metadata: :mod:`drafts.neural.checkpoint` loads weights after it,
``moa-chat``'s settings check ``--draft`` with it before anything slow starts (so importing this
module must never import torch or a model package; a fresh-process test holds it to that).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from drafts.errors import CheckpointError
from drafts.neural.kinds import KIND_NAMES

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "draft.safetensors"
FORMAT = 1  # the layout save_draft writes; bump on any change a reader must know about


def read_meta(path: Path) -> dict[str, Any]:
    """The checkpoint's ``config.json``, checked: this format, a declared kind, a named target."""
    config = path / CONFIG_FILE
    if not config.is_file():
        raise CheckpointError(
            f"no draft checkpoint at {path} (missing {CONFIG_FILE}); train one with "
            "`moa-train --draft moa --out DIR` or pass the directory of an existing one"
        )
    try:
        meta = json.loads(config.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(
            f"{config} is unreadable or not valid JSON ({exc}); the checkpoint is corrupt, retrain or restore it"
        ) from exc
    if not isinstance(meta, dict):
        raise CheckpointError(f"{config} holds no JSON object; the checkpoint is corrupt, retrain or restore it")
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{config} has format {meta.get('format')!r}, this version reads {FORMAT}")
    if meta.get("kind") not in KIND_NAMES:
        raise CheckpointError(
            f"{config} declares draft kind {meta.get('kind')!r}; this version loads {', '.join(KIND_NAMES)}"
        )
    target = meta.get("target")
    if not isinstance(target, dict) or not isinstance(target.get("name"), str):
        raise CheckpointError(
            f"{config} names no target it was trained for (a 'target' with a 'name'); retrain it with moa-train"
        )
    return meta


def trained_for(meta: dict[str, Any]) -> str:
    """The name of the target a checkpoint was trained for (``TargetFingerprint.name``), from :func:`read_meta`."""
    return str(meta["target"]["name"])
