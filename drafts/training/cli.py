"""``moa-train``: train a draft (MoA, EAGLE or independent) for any target.

moa-train --draft moa --target smollm2 --data sharegpt --tokens 500000 --out runs/moa
moa-train --draft moa --out runs/moa --tokens 500000 --resume     # continue after a stop
moa-train --draft moa --init runs/moa --data regen.jsonl --tokens 50000 --out runs/moa-ft   # fine-tune
moa-train --draft eagle --init runs/eagle --align-steps 3 --topk-weight 1 ...   # HASS
moa-train --draft moa --init runs/moa --final-hidden --lsa-layers 10 ...     # MoA ablation variants
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from drafts.errors import CheckpointError, ConfigError, MoaError
from drafts.moa.model import MoADraft
from drafts.neural.base import NeuralDraft
from drafts.neural.factory import KINDS, build_draft, default_config
from drafts.neural.target_parts import TargetParts
from drafts.nn.blocks import RMSNorm
from drafts.target.device import DEVICE_CHOICES, resolve_device
from drafts.target.loading import TargetFingerprint, load_target
from drafts.target.runner import TargetRunner
from drafts.training import architecture
from drafts.training.checkpoint import WEIGHTS_FILE, check_fingerprint, load_draft, read_meta
from drafts.training.data import load_training_conversations
from drafts.training.feature_cache import FeatureCache
from drafts.training.losses import LossWeights
from drafts.training.tokenize import tokenize_all
from drafts.training.trainer import STATE_FILE, TrainConfig, Trainer
from drafts.training.vocab import frequent_tokens

VOCAB_SAMPLE = 3000  # conversations whose responses rank the draft vocabulary
NORM_STD = 0.02  # --norm-init official: the official MoA code's initializer_range, applied to its RMSNorms too


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moa-train", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--draft", choices=KINDS, default="moa")
    p.add_argument("--target", default=None, help="smollm2 (default) | gemma3-270m | DIR | FILE.gguf | hub id")
    p.add_argument("--data", default="sharegpt", help="sharegpt (train split) | FILE.json | FILE.jsonl")
    p.add_argument("--tokens", type=int, required=True, help="training budget in sequence tokens")
    p.add_argument("--out", type=Path, required=True, help="checkpoint directory")
    p.add_argument("--resume", action="store_true", help="continue the run saved in --out")
    p.add_argument("--init", type=Path, default=None, help="start from this checkpoint's weights (fresh schedule)")
    p.add_argument("--max-len", type=int, default=512)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--accum", type=int, default=2, help="forward passes per optimizer step")
    p.add_argument(
        "--batch", type=int, default=1, help="sequences per forward pass, right-padded (16-32 on a GPU; 1 on a CPU)"
    )
    p.add_argument("--draft-vocab", type=int, default=16384, help="reduced draft vocabulary size (0 = full)")
    architecture.add_flags(p)
    p.add_argument(
        "--no-staircase",
        action="store_true",
        help="MoA: no staircase self-attention mask (its curriculum is done, e.g. when continuing with --init)",
    )
    p.add_argument("--topk-weight", type=float, default=0.0, help="HASS top-K distillation weight (K=10)")
    p.add_argument(
        "--align-steps",
        type=int,
        default=1,
        help="HASS context alignment: N training steps per sequence, step j on the draft's own\n"
        "earlier predictions as at drafting depth j (EAGLE; 1 = off, HASS uses 3)",
    )
    p.add_argument(
        "--tail-loss",
        choices=("raw", "normalised"),
        default="raw",
        help="MoA --tli N>0: SmoothL1 of the tail input as is, or divided by the target's RMS per position",
    )
    p.add_argument(
        "--norm-init",
        choices=("ones", "official"),
        default="ones",
        help="a new draft's RMSNorm weights: 1 (default), or ~N(0, 0.02) like every new module in the\n"
        "official MoA code (its _init_weights); a from-scratch option, refused with --init/--resume",
    )
    p.add_argument("--warmup", type=int, default=30, help="learning-rate warm-up, in optimizer steps")
    p.add_argument("--checkpoint-every", type=int, default=50, help="optimizer steps between checkpoints")
    p.add_argument(
        "--feature-cache",
        type=Path,
        default=None,
        help="cache the target's activations here (float16): later epochs and drafts skip the target",
    )
    p.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="also stop after this many minutes of training (the schedule ends with whichever budget runs out first)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", choices=DEVICE_CHOICES)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _train(args, argv if argv is not None else sys.argv[1:])
    except MoaError as exc:
        print(f"moa-train: error: {exc}", file=sys.stderr)
        return 2


def _train(args: argparse.Namespace, argv: list[str]) -> int:
    _check_out(args)
    conversations = load_training_conversations(args.data)
    device = resolve_device(args.device)
    runner = TargetRunner(load_target(args.target, device, torch.float32))
    cfg = TrainConfig(
        tokens=args.tokens,
        max_len=args.max_len,
        lr=args.lr,
        accum=args.accum,
        batch=args.batch,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
        warmup_steps=args.warmup,
        weights=LossWeights(topk=args.topk_weight, tail_norm=args.tail_loss == "normalised"),
        align_steps=args.align_steps,
        max_minutes=args.max_minutes,
    )
    if args.resume:
        model, vocab_info = _resumed_model(args, runner)
    elif args.init is not None:
        model, vocab_info = _initialised_model(args, runner)
    else:
        model, vocab_info = _new_model(args, runner, conversations, cfg)
    if args.no_staircase and isinstance(model, MoADraft):
        model.cfg = dataclasses.replace(model.cfg, staircase=False)
    _check_model_options(args, model)
    cache = None if args.feature_cache is None else FeatureCache(args.feature_cache, runner.fingerprint)
    trainer = Trainer(model.to(device), runner, conversations, cfg, args.out, cache)
    if args.resume:
        trainer.resume()
    info = {
        "command": "moa-train " + shlex.join(argv),
        "data": args.data,
        "feature_cache": None if cache is None else str(args.feature_cache),
        "conversations": len(conversations),
        "config": cfg.to_dict() | {"weights": vars(cfg.weights)},
        **vocab_info,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "torch_threads": torch.get_num_threads(),
    }
    print(
        f"moa-train: {model.kind} draft, {model.trainable_parameters():,} trainable parameters, "
        f"draft vocabulary {model.parts.draft_vocab}",
        file=sys.stderr,
    )
    state = _run_with_progress(trainer, info)
    print(
        f"moa-train: done: {state.tokens_seen:,} tokens, {state.step} steps, {state.wall_s / 60:.1f} min, "
        f"last {state.last}; checkpoint in {args.out}",
        file=sys.stderr,
    )
    return 0


def _check_model_options(args: argparse.Namespace, model: NeuralDraft) -> None:
    if args.align_steps > 1 and not model.aligns_context:
        raise ConfigError(
            f"--align-steps {args.align_steps}: a {model.kind} draft never reads its own predicted features, so "
            "there is no context to align (one training pass already matches inference); drop --align-steps"
        )
    if args.tail_loss != "raw" and model.tail_input_layer is None:
        raise ConfigError("--tail-loss applies to MoA drafts with Target Layer Inference; add --tli N (N >= 1)")


def _check_out(args: argparse.Namespace) -> None:
    """Refuse a wrong ``--out``/``--resume`` before anything slow (data, target) is loaded."""
    architecture.check(args)
    if args.norm_init != "ones" and (args.init is not None or args.resume):
        raise ConfigError("--norm-init sets a new draft's initial weights; drop it with --init or --resume")
    if args.no_staircase and (args.draft != "moa" or args.resume):
        raise ConfigError(
            "--no-staircase applies to a new or --init MoA run (a resumed run keeps its recorded setting); drop it"
        )
    if not args.resume and (args.out / STATE_FILE).exists():
        raise CheckpointError(
            f"{args.out} already holds a training run; pass --resume to continue it or choose another --out"
        )
    if args.resume:
        if not (args.out / STATE_FILE).exists():
            raise CheckpointError(
                f"--resume: {args.out} holds no training run ({STATE_FILE} is missing); start without --resume"
            )
        kind = read_meta(args.out)["kind"]
        if kind != args.draft:
            raise CheckpointError(f"{args.out} holds a {kind} draft, not {args.draft}; pass --draft {kind}")


def _new_model(
    args: argparse.Namespace, runner: TargetRunner, conversations: list[Any], cfg: TrainConfig
) -> tuple[NeuralDraft, dict[str, Any]]:
    torch.manual_seed(args.seed)
    vocab_size = int(runner.config.vocab_size)
    size = args.draft_vocab if args.draft_vocab > 0 else vocab_size
    sample = tokenize_all(runner.tokenizer, conversations[:VOCAB_SAMPLE], cfg.max_len)
    d2t, coverage = frequent_tokens(sample, size, vocab_size, always=runner.stop_ids)
    config = default_config(args.draft, runner, tli_layers=args.tli or 0) | architecture.overrides(args)
    model = build_draft(args.draft, config, TargetParts.from_model(runner.model, d2t))
    init_weights(model, norm_std=NORM_STD if args.norm_init == "official" else None)
    return model, {"draft_vocab_coverage": coverage, "norm_init": args.norm_init}


# what a resumed run keeps from the run it continues: where its weights began, and how those were trained
RUN_HISTORY = ("init", "init_training", "norm_init")


def _resumed_model(args: argparse.Namespace, runner: TargetRunner) -> tuple[NeuralDraft, dict[str, Any]]:
    from safetensors.torch import load_file

    meta = read_meta(args.out)
    check_fingerprint(args.out, TargetFingerprint.from_dict(meta["target"]), runner.fingerprint)
    d2t = load_file(str(args.out / WEIGHTS_FILE))["d2t"]
    model = build_draft(meta["kind"], meta["config"], TargetParts.from_model(runner.model, d2t))
    recorded = meta["training"]
    history = {key: recorded[key] for key in RUN_HISTORY if key in recorded}
    first = recorded.get("first_command", recorded.get("command"))  # the command that began the run
    return model, {"draft_vocab_coverage": recorded.get("draft_vocab_coverage"), "first_command": first, **history}


def _initialised_model(args: argparse.Namespace, runner: TargetRunner) -> tuple[NeuralDraft, dict[str, Any]]:
    """A draft starting from ``--init``'s weights (vocabulary and sizes included): fine-tuning."""
    meta = read_meta(args.init)
    if meta["kind"] != args.draft:
        raise CheckpointError(
            f"--init {args.init} holds a {meta['kind']} draft, not {args.draft}; pass --draft {meta['kind']}"
        )
    given = architecture.overrides(args)
    model = architecture.extended(args.init, meta, given, runner) if given else load_draft(args.init, runner)
    return model, {
        "draft_vocab_coverage": meta["training"].get("draft_vocab_coverage"),
        "init": str(args.init),
        "init_training": meta["training"],  # how the starting weights were trained: the history stays with the draft
    }


def init_weights(model: NeuralDraft, norm_std: float | None = None) -> None:
    """Linear weights ~ N(0, 0.02), biases 0 (as the MoA and EAGLE code initialise); with
    ``norm_std`` the RMSNorm weights ~ N(0, norm_std) too (the official code's ``_init_weights``),
    else they stay 1."""
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, RMSNorm) and norm_std is not None:
            torch.nn.init.normal_(module.weight, std=norm_std)


def _run_with_progress(trainer: Trainer, info: dict[str, Any]) -> Any:
    bar = tqdm(
        total=trainer.cfg.tokens,
        initial=trainer.state.tokens_seen,
        unit="tok",
        unit_scale=True,
        desc="moa-train",
        file=sys.stderr,
    )
    start_tokens, start_time = trainer.state.tokens_seen, time.perf_counter()

    def on_step(state: Any, n_tokens: int) -> None:
        rate = (state.tokens_seen - start_tokens) / max(1e-9, time.perf_counter() - start_time)
        s = state.last
        cached = "" if trainer.cache is None else f" cache {_hit_rate(trainer.cache):.0%}"
        bar.set_postfix_str(f"loss {s['loss']:.3f} top1 {s['top1']:.3f} {rate:.0f} tok/s step {state.step}{cached}")
        bar.update(n_tokens)

    try:
        return trainer.run(info, on_step)
    finally:
        bar.close()


def _hit_rate(cache: FeatureCache) -> float:
    return cache.hits / max(1, cache.hits + cache.misses)


if __name__ == "__main__":
    raise SystemExit(main())
