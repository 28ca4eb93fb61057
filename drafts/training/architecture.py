"""MoA architecture options of ``moa-train`` (issue 12's ablation: "why MoA does not beat EAGLE").

``--tli N``, ``--lsa-layers N`` and ``--final-hidden`` set fields of :class:`drafts.moa.config.MoAConfig`;
the checkpoint's ``config.json`` records them and inference rebuilds the same architecture from it.
A new run takes them as given; ``--init`` applies them to the starting checkpoint's config (its
trained weights carry over: LSA's weights do not depend on how many layers it reads, the reused
TLI layers are the target's own, and the final-hidden projection starts at zero, so the extended
draft starts out as the old one for N = 0); ``--resume`` keeps what the run recorded.

``--verify-period LO-HI`` and ``--depth0`` change only how training simulates verification (the
official code's k ~ U{6..14}; its verified positions reading their own target state): the
weights and the inference computation are unchanged, and old checkpoints (no such fields) keep
the defaults, which are the old behaviour.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from safetensors.torch import load_file

from drafts.errors import CheckpointError, ConfigError
from drafts.neural.base import NeuralDraft
from drafts.neural.factory import build_draft
from drafts.neural.target_parts import TargetParts
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import WEIGHTS_FILE

FLAGS = {
    "tli_layers": "--tli",
    "lsa_layers": "--lsa-layers",
    "final_hidden": "--final-hidden",
    "period_min": "--verify-period",
    "period_max": "--verify-period",
    "depth0": "--depth0",
}
NEW_MODULES = ("final_proj.",)  # weights a draft extended by these options may lack (they start at zero)


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tli", type=int, default=None, help="MoA Target Layer Inference: reuse the target's last N layers (default 0)"
    )
    p.add_argument(
        "--lsa-layers",
        type=int,
        default=None,
        help="MoA: Layer Self-Attention reads N of the target's layers, evenly spaced, the last included (default all)",
    )
    p.add_argument(
        "--final-hidden",
        action="store_true",
        help="MoA: add the target's final hidden state (EAGLE's feature) to each verified token's memory vector",
    )
    p.add_argument(
        "--verify-period",
        type=_period_range,
        default=None,
        metavar="LO-HI",
        help="MoA training: simulated verification every k ~ U{LO..HI} response tokens (default 6-14, the official)",
    )
    p.add_argument(
        "--depth0",
        action="store_true",
        help="MoA training, as the official code: a verified position also reads its own target state (depth 0)",
    )


def _period_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("-")
    try:
        return (int(low), int(high)) if sep else (int(low), int(low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give LO-HI, e.g. 6-14, or one period, e.g. 4") from None


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The MoA config fields the command line sets (only those given; none for other drafts)."""
    return _given(args) if args.draft == "moa" else {}


def _given(args: argparse.Namespace) -> dict[str, Any]:
    given: dict[str, Any] = {}
    if args.tli is not None:
        given["tli_layers"] = args.tli
    if args.lsa_layers is not None:
        given["lsa_layers"] = args.lsa_layers
    if args.final_hidden:
        given["final_hidden"] = True
    if args.verify_period is not None:
        given["period_min"], given["period_max"] = args.verify_period
    if args.depth0:
        given["depth0"] = True
    return given


def check(args: argparse.Namespace) -> None:
    """Refuse options that cannot apply, before anything slow is loaded."""
    given = {name: value for name, value in _given(args).items() if value}  # --tli 0 is every draft's
    flags = ", ".join(dict.fromkeys(FLAGS[name] for name in given))
    if given and args.draft != "moa":
        raise ConfigError(f"{flags} apply to MoA drafts only; drop them for --draft {args.draft}")
    if given and args.resume:
        raise ConfigError(f"{flags}: a resumed run keeps the architecture it recorded; drop them with --resume")
    if args.verify_period is not None and not 1 <= args.verify_period[0] <= args.verify_period[1]:
        low, high = args.verify_period
        raise ConfigError(f"--verify-period {low}-{high}: give LO-HI with 1 <= LO <= HI (the official code's: 6-14)")


def extended(init: Path, meta: dict[str, Any], given: dict[str, Any], runner: TargetRunner) -> NeuralDraft:
    """The ``--init`` checkpoint's draft rebuilt with the ``given`` config fields, its weights loaded."""
    tensors = load_file(str(init / WEIGHTS_FILE))
    parts = TargetParts.from_model(runner.model, tensors.pop("d2t"))
    model = build_draft(meta["kind"], meta["config"] | given, parts)
    try:
        missing, unexpected = model.load_state_dict(tensors, strict=False)
    except RuntimeError as exc:
        raise CheckpointError(f"--init {init}: its weights do not fit the changed architecture ({exc})") from exc
    lacking = [name for name in missing if not name.startswith(NEW_MODULES)]
    if lacking or unexpected:
        raise CheckpointError(
            f"--init {init}: weights do not match the changed architecture (missing {lacking}, unexpected {unexpected})"
        )
    return model.to(device=runner.device, dtype=runner.dtype)
