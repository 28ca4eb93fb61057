"""``moa-bench``: measure drafters against plain decoding of the same target, in one run.

    moa-bench --method ar,lookup,oracle --dataset humaneval --limit 20 --max-new-tokens 128 \
              --temperature 0 --chain 4 --json bench.json
    moa-bench --remote --link lan,wifi,4g,3g ...   # the remote engine over shaped links: see moa-bench-remote
    moa-bench --offline-horizon 8,16,32 ...        # tokens each draft keeps writing alone: drafts.bench.offline_horizon
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from drafts.bench.benchmark import BenchConfig, run_benchmark
from drafts.bench.environment import run_environment
from drafts.bench.methods import PLAIN_METHODS
from drafts.bench.report import format_table, write_json
from drafts.data.prompts import BenchPrompt, load_prompts
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.drafters.registry import drafter_spec, set_checkpoint, set_tree_scoring, tree_scorings
from drafts.errors import ConfigError, MoaError
from drafts.neural.tree_search import TreeScoring
from drafts.sampling import SamplingConfig
from drafts.target.default_shape import asked_shape, local_shape
from drafts.target.device import DEVICE_CHOICES, DTYPE_CHOICES, resolve_device, resolve_dtype
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="moa-bench", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--method", default="ar,lookup,oracle", help="comma-separated: ar, generate, lookup, oracle, ...")
    p.add_argument("--dataset", default="humaneval", help="humaneval | sharegpt-heldout | FILE.jsonl")
    p.add_argument("--limit", type=int, default=20, help="number of prompts (default 20)")
    p.add_argument(
        "--skip", type=int, default=0, help="leave out the dataset's first N prompts (tune on prompts the report skips)"
    )
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="seed of sampling at T>0")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument(
        "--chain",
        type=int,
        default=None,
        help="draft a chain of G tokens per round (default: tree 3,4,8 for the packed target on a CPU, else"
        " chain 4; drafts.target.default_shape)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=0.0,
        help="chains: stop drafting where the draft's top probability is below P (default 0: off)",
    )
    shape.add_argument("--tree", help="draft an EAGLE-2 dynamic tree DEPTH,TOPK,TOTAL (e.g. 4,4,16)")
    p.add_argument("--target", default=None, help="smollm2 (default) | gemma3-270m | DIR | FILE.gguf | hub id")
    p.add_argument("--device", default="auto", choices=DEVICE_CHOICES)
    p.add_argument(
        "--dtype", default="auto", choices=DTYPE_CHOICES, help="auto: float32 on CPU, bfloat16 on CUDA, float16 on MPS"
    )
    linear = p.add_mutually_exclusive_group()
    linear.add_argument(
        "--dense-linear",
        dest="linear",
        action="store_const",
        const="dense",
        default="auto",
        help="the target's Linear layers on PyTorch's dense kernels (default on a CPU in float32: packed once for"
        " oneDNN, every method, ar too; drafts.target.packed_linear)",
    )
    linear.add_argument(
        "--packed-linear",
        dest="linear",
        action="store_const",
        const="packed",
        help="packed, or an error where it cannot be (the default packs where it can)",
    )
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's choice)")
    p.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="moa|eagle|independent=DIR replaces the shipped draft; any other NAME adds a method of that name"
        " (e.g. --checkpoint eagle-regen=runs/eagle-regen --method eagle,eagle-regen)",
    )
    p.add_argument(
        "--tree-scoring",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="how draft NAME's trees rank nodes: slope=A[/A2..],bias=B[/B2..] per depth, rank_slope=..,rank_bias=.."
        " per sibling rank (drafts.neural.tree_search; e.g. --checkpoint moa-cal=DIR"
        " --tree-scoring moa-cal=slope=1.2,bias=-0.1 --method moa,moa-cal)",
    )
    return p


def register_tree_scorings(items: list[str]) -> None:
    """``--tree-scoring NAME=SPEC`` items, after the checkpoints (NAME may be one of theirs)."""
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep:
            raise ConfigError(f"--tree-scoring takes NAME=SPEC (e.g. moa=slope=1.2,bias=-0.1), got {item!r}")
        set_tree_scoring(name, TreeScoring.parse(spec))


def register_checkpoints(items: list[str]) -> None:
    """``--checkpoint NAME=DIR`` items: each names a trained draft's checkpoint (see ``set_checkpoint``)."""
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            raise ConfigError(f"--checkpoint takes NAME=DIR (e.g. moa=runs/moa), got {item!r}")
        if name in PLAIN_METHODS:
            raise ConfigError(f"{name!r} is plain decoding, not a draft; give the checkpoint another name")
        set_checkpoint(name, Path(path))


def parse_config(args: argparse.Namespace) -> BenchConfig:
    """The run's methods and decoding, checked before any model loads (the default chain: for how the target runs)."""
    register_checkpoints(args.checkpoint)
    register_tree_scorings(args.tree_scoring)
    methods = tuple(dict.fromkeys(m.strip() for m in args.method.split(",") if m.strip()))
    for m in methods:
        if m not in PLAIN_METHODS:
            drafter_spec(m)  # raises a clear error for unknown names
    if "ar" not in methods:
        methods = ("ar", *methods)  # speedups are relative to ar measured in the same run
    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be >= 1, got {args.limit}")
    shape = asked_shape(args.tree, args.chain, args.confidence, lambda: _default_shape(args))
    sampling = SamplingConfig(args.temperature, args.top_k, args.top_p, seed=args.seed)
    return BenchConfig(methods, DecodeConfig(args.max_new_tokens, sampling, shape))


def _default_shape(args: argparse.Namespace) -> DraftShape:
    """The best measured shape for how the target runs (drafts.target.default_shape)."""
    device = resolve_device(args.device)
    return local_shape(device, resolve_dtype(args.dtype, device), args.linear)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--remote" in argv:
        return remote(argv)
    if any(a.partition("=")[0] == "--offline-horizon" for a in argv):
        from drafts.bench.offline_horizon import main as offline_horizon  # its own flags: see its --help

        return offline_horizon(argv)
    args = build_parser().parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    try:
        config = parse_config(args)
        prompts = load_prompts(args.dataset, skip=args.skip)
        device = resolve_device(args.device)
        runner = TargetRunner(load_target(args.target, device, resolve_dtype(args.dtype, device), args.linear))
        token_prompts, skipped = fitting_prompts(runner, prompts, args.limit, config.decode.max_new_tokens)
        result = _run(runner, token_prompts, config)
    except MoaError as exc:
        print(f"moa-bench: error: {exc}", file=sys.stderr)
        return 2
    result["config"] = _describe(args, config, runner, len(token_prompts)) | {"skipped_prompts": skipped}
    print(format_table(result))
    if args.json:
        write_json(args.json, {"config": result["config"], "methods": result["methods"]})
    return 0


def remote(argv: list[str]) -> int:
    """``--remote``: the remote benchmark lives in ``app`` (it drives the client engine), which ``drafts``
    never imports, so it runs as ``python -m app.bench`` with the other arguments."""
    rest = [a for a in argv if a != "--remote"]
    return subprocess.run([sys.executable, "-m", "app.bench", *rest], check=False).returncode


def fitting_prompts(
    runner: TargetRunner, prompts: list[BenchPrompt], limit: int | None, max_new_tokens: int
) -> tuple[list[list[int]], list[str]]:
    """The first ``limit`` prompts (all if None) whose tokens plus ``max_new_tokens`` fit the context,
    and the ids of those skipped on the way (a benchmark never dies on its 18th prompt)."""
    kept: list[list[int]] = []
    skipped: list[str] = []
    for prompt in prompts:
        if limit is not None and len(kept) >= limit:
            break
        tokens = runner.format_chat(prompt.messages)
        if len(tokens) + max_new_tokens > runner.context_length:
            skipped.append(prompt.id)
            continue
        kept.append(tokens)
    if skipped:
        print(
            f"moa-bench: skipped {len(skipped)} prompt(s) longer than the context of {runner.context_length} "
            f"with --max-new-tokens {max_new_tokens}: {', '.join(skipped)}",
            file=sys.stderr,
        )
    if not kept:
        raise ConfigError(f"no prompt fits the context of {runner.context_length} tokens; lower --max-new-tokens")
    return kept, skipped


def _run(runner: TargetRunner, prompts: list[list[int]], config: BenchConfig) -> dict[str, Any]:
    total = len(prompts) * len(config.methods)
    with tqdm(total=total, desc="moa-bench", unit="run", file=sys.stderr) as bar:

        def tick(method: str) -> None:
            bar.set_postfix_str(method)
            bar.update()

        return run_benchmark(runner, prompts, config, tick)


def _describe(args: argparse.Namespace, config: BenchConfig, runner: TargetRunner, n: int) -> dict[str, Any]:
    s = config.decode.sampling
    return {
        "methods": list(config.methods),
        "dataset": args.dataset,
        "skip": args.skip,
        "prompts": n,
        "max_new_tokens": config.decode.max_new_tokens,
        "temperature": s.temperature,
        "top_k": s.top_k,
        "top_p": s.top_p,
        "seed": s.seed,
        "draft_shape": config.decode.shape.describe(),
        "tree_scoring": {name: scoring.describe() for name, scoring in tree_scorings().items()},
        "linear": runner.linear,
        **run_environment(runner),
    }
