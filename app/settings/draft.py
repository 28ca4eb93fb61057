"""What ``--draft`` means: a kind shipped for the target, a checkpoint directory, or none.

Resolved from the files alone (no model loaded, no torch imported: the checkpoint's metadata is
read by :mod:`drafts.neural.checkpoint_meta`, as when it loads), so a wrong checkpoint or a draft
trained for another target stops ``moa-chat`` before anything slow starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from drafts.errors import CheckpointError, ConfigError
from drafts.locations import shipped_checkpoint
from drafts.neural.checkpoint_meta import CONFIG_FILE, read_meta, trained_for
from drafts.neural.kinds import KIND_NAMES, draft_kind

SHIPPED_KINDS = KIND_NAMES  # the declared kinds (drafts.neural.kinds); each ships a checkpoint for SmolLM2
TARGET_NAMES = {"smollm2": "SmolLM2-135M-Instruct", "gemma3-270m": "gemma-3-270m"}  # aliases -> trained-for names


class DraftError(ConfigError):
    """``--draft`` names no usable checkpoint for ``--target``; the message says what to pass."""


@dataclass(frozen=True)
class DraftChoice:
    kind: str | None  # a kind of drafts.neural.kinds (moa, eagle, independent), or None for no draft
    checkpoint: Path | None  # its directory (None without a draft)

    @property
    def server_half(self) -> Path | None:
        """The checkpoint whose part the verifier runs (MoA's memory), if any."""
        return self.checkpoint if self.kind is not None and draft_kind(self.kind).server_compresses else None


def resolve_draft(spec: str, target: str) -> DraftChoice:
    """``--draft`` as a kind and a checkpoint directory, checked against ``--target`` without loading."""
    if spec == "none":
        return DraftChoice(None, None)
    if spec in SHIPPED_KINDS:
        checkpoint = shipped_checkpoint(target_name(target), spec)
        if not (checkpoint / CONFIG_FILE).is_file():
            raise DraftError(
                f"no {spec} draft is shipped for target {target!r}; train one with "
                f"`moa-train --draft {spec} --target {target} --out DIR` and pass --draft DIR, or use --draft none"
            )
        return DraftChoice(spec, checkpoint)
    path = Path(spec).expanduser()
    return DraftChoice(_checkpoint_kind(path, target), path)


def target_name(target: str) -> str:
    """The name a target's drafts record (``TargetFingerprint.name``) for an alias, a .gguf or a directory."""
    if target in TARGET_NAMES:
        return TARGET_NAMES[target]
    return Path(target).stem if target.endswith(".gguf") else Path(target).name


def _checkpoint_kind(path: Path, target: str) -> str:
    try:
        meta = read_meta(path)
    except CheckpointError as exc:
        raise DraftError(f"--draft {path}: {exc} (--draft also takes {', '.join(SHIPPED_KINDS)} or none)") from exc
    trained = trained_for(meta)
    if trained != target_name(target):
        raise DraftError(
            f"--draft {path} was trained for {trained}, but the target is {target_name(target)} "
            f"(--target {target}); pass the matching --target, or a draft trained for this one"
        )
    return str(meta["kind"])
