"""``moa-bench --offline-horizon 8,16,32``: how many tokens each method keeps when it writes alone.

    moa-bench --offline-horizon 8,16,32 --cuts 8,32,64 --dataset sharegpt-heldout --limit 20 \
              --method moa,eagle,independent,gguf,target --threads 1 --json offline.json

When the link drops the client keeps writing with the draft alone (or a local GGUF model), and
the verifier later keeps that text up to the first token where it differs from the target's own
output (T = 0). Here, without a network: the target answers each prompt greedily (the
reference); at every cut (after ``c`` answer tokens) each method follows the target's exact
state up to the cut and then continues alone for the longest horizon; the kept tokens are the
common prefix with the reference after the cut (:mod:`drafts.bench.offline_stats`), reported at
each horizon; beside them, the kept tokens *with re-sync* (the tail after the first rejection as a
lookup draft, :mod:`drafts.bench.offline_resync`, against a reference running 32 tokens further).
``target`` continuing itself must keep everything: the harness's own check.
A cut is skipped where the answer ends before ``c + horizon`` tokens.

Each draft's figures come with two diagnostics over the same tokens
(:mod:`drafts.bench.offline_continuation`): ``with_target_state`` (every token drafted right
after the target committed all before it: what online depth-1 drafting would keep) and
``with_target_tokens`` (no target state after the cut, the target's own tokens as the chain:
the draft's accuracy at each offline depth over every sample).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from drafts.bench.environment import run_environment
from drafts.bench.offline_continuation import (
    GGUF,
    GREEDY,
    TARGET,
    Continuer,
    ContinuerSpec,
    DraftContinuer,
    build_continuer,
    union_needs,
)
from drafts.bench.offline_resync import RESYNC_PAST, ResyncCounts
from drafts.bench.offline_stats import KeptCounts
from drafts.bench.report import write_json
from drafts.data.prompts import load_prompts
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.drafters.registry import drafter_spec
from drafts.errors import ConfigError, MoaError
from drafts.target.activations import ActivationRequest, Activations
from drafts.target.device import DEVICE_CHOICES, DTYPE_CHOICES, resolve_device, resolve_dtype
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession

DEFAULT_METHODS = "moa,eagle,independent,gguf,target"


@dataclass(frozen=True)
class HorizonConfig:
    methods: tuple[str, ...]  # trained draft names, "gguf", "target"
    horizons: tuple[int, ...]  # kept tokens are reported at each; the longest one is generated
    cuts: tuple[int, ...]  # answer tokens the target wrote before each cut
    with_target_state: bool = True  # also run each draft over the same tokens with the target's state

    def __post_init__(self) -> None:
        if not self.methods:
            raise ConfigError("--method names no method; e.g. --method moa,eagle,independent,gguf,target")
        if not self.horizons or min(self.horizons) < 1:
            raise ConfigError(f"--offline-horizon takes positive token counts (e.g. 8,16,32), got {self.horizons}")
        if not self.cuts or min(self.cuts) < 1:
            raise ConfigError(f"--cuts takes positive answer positions (e.g. 8,32,64), got {self.cuts}")

    @property
    def horizon(self) -> int:
        return max(self.horizons)

    @property
    def answer_tokens(self) -> int:
        """How long the reference answer must be for the last cut to count."""
        return max(self.cuts) + self.horizon


@dataclass
class MethodRecord:
    offline: KeptCounts
    with_target_state: KeptCounts | None  # drafts only (None: not asked for)
    with_target_tokens: KeptCounts | None  # drafts only
    resync: ResyncCounts  # kept with the tail re-synced (drafts.bench.offline_resync)
    seconds: float = 0.0  # writing offline, all samples
    tokens: int = 0

    def to_json(self, horizons: tuple[int, ...]) -> dict[str, Any]:
        return {
            "offline": self.offline.summary(horizons),
            "offline_resync": self.resync.summary(),
            "with_target_state": self.with_target_state.summary(horizons) if self.with_target_state else None,
            "with_target_tokens": self.with_target_tokens.summary(horizons) if self.with_target_tokens else None,
            "ms_per_offline_token": 1000 * self.seconds / self.tokens if self.tokens else None,
        }


@dataclass
class HorizonRun:
    """Everything one run collects."""

    config: HorizonConfig
    records: dict[str, MethodRecord]
    samples: list[dict[str, Any]] = field(default_factory=list)
    skipped_cuts: list[dict[str, int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "methods": {name: r.to_json(self.config.horizons) for name, r in self.records.items()},
            "samples": self.samples,
            "skipped_cuts": self.skipped_cuts,
        }


def run_offline_horizon(
    runner: TargetRunner,
    prompts: list[list[int]],
    continuers: list[Continuer],
    config: HorizonConfig,
    tick: Callable[[], object] | None = None,
) -> HorizonRun:
    """Every continuer at every cut of every prompt's greedy answer; see the module docstring."""
    H = config.horizon
    records = {c.name: _record(c, config) for c in continuers}
    run = HorizonRun(config, records)
    for i, prompt in enumerate(prompts):
        answer = reference_answer(runner, prompt, config.answer_tokens + RESYNC_PAST)
        cuts = [c for c in config.cuts if c + H <= len(answer)]
        short = [c for c in config.cuts if c not in cuts]
        run.skipped_cuts += [{"prompt": i, "cut": c, "answer_tokens": len(answer)} for c in short]
        if cuts:
            run_answer(runner, i, prompt, answer, cuts, continuers, run)
        if tick is not None:
            tick()
    return run


def _record(c: Continuer, config: HorizonConfig) -> MethodRecord:
    H, draft = config.horizon, isinstance(c, DraftContinuer)
    return MethodRecord(
        KeptCounts(H),
        KeptCounts(H) if draft and config.with_target_state else None,
        KeptCounts(H) if draft else None,
        ResyncCounts(config.horizons),
    )


def reference_answer(runner: TargetRunner, prompt: list[int], max_new_tokens: int) -> list[int]:
    """The target's greedy answer (its stop token excluded)."""
    return generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens, GREEDY)).tokens


def run_answer(
    runner: TargetRunner,
    index: int,
    prompt: list[int],
    answer: list[int],
    cuts: list[int],
    continuers: list[Continuer],
    run: HorizonRun,
) -> None:
    """One answer: the target's state grows cut by cut; at each cut every continuer writes alone."""
    H, needs, sequence = run.config.horizon, union_needs(continuers), prompt + answer
    session = runner.new_session()
    for c in continuers:
        c.begin(prompt)
    for cut in cuts:
        context = sequence[: len(prompt) + cut]
        new = sequence[session.length : len(context) - 1]  # the root (the cut's last token) stays unobserved
        acts = commit(runner, session, new, needs)
        for c in continuers:
            c.observe(new, acts)
        target, reference = answer[cut : cut + H], answer[cut : cut + H + RESYNC_PAST]
        row: dict[str, Any] = {"prompt": index, "cut": cut, "kept": {}, "kept_resync": {}, "offline": {}}
        for c in _rotated(continuers, index + cut):  # no method always runs first (timings)
            offline = _write_offline(c, context, target, run.records[c.name])
            row["kept"][c.name] = run.records[c.name].offline.add(offline, target)
            row["kept_resync"][c.name] = run.records[c.name].resync.add(offline, reference)
            row["offline"][c.name] = offline  # the tokens, so that another re-sync rule can be scored again
        row["reference"] = reference
        if any(r.with_target_state is not None for r in run.records.values()):
            row["kept_with_target_state"] = _with_target_state(runner, session, context, target, continuers, run)
        run.samples.append(row)


def commit(runner: TargetRunner, session: TargetSession, tokens: list[int], needs: ActivationRequest) -> Activations:
    """Run ``tokens`` through the target and commit them; their activations (what ``needs`` asks)."""
    runner.extend(session, tokens, needs, last_only=True)
    return runner.commit(session, None, needs)


def _write_offline(c: Continuer, context: list[int], target: list[int], record: MethodRecord) -> list[int]:
    t0 = time.perf_counter()
    offline = c.continue_after(context, len(target))
    record.seconds += time.perf_counter() - t0
    record.tokens += len(offline)
    if record.with_target_tokens is not None and isinstance(c, DraftContinuer):
        record.with_target_tokens.add(c.with_target_tokens(context, target), target)
    return offline


def _with_target_state(
    runner: TargetRunner,
    session: TargetSession,
    context: list[int],
    target: list[int],
    continuers: list[Continuer],
    run: HorizonRun,
) -> dict[str, int]:
    """Each draft over the same tokens, every one drafted after the target committed all before it."""
    held = session.length
    acts = commit(runner, session, [context[-1], *target[:-1]], union_needs(continuers))
    kept = {}
    for c in continuers:
        record = run.records[c.name].with_target_state
        if record is not None and isinstance(c, DraftContinuer):
            kept[c.name] = record.add(c.with_target_state(context, target, acts), target)
    session.truncate(held)
    return kept


def _rotated(items: list[Continuer], k: int) -> list[Continuer]:
    k %= len(items)
    return items[k:] + items[:k]


# -- command line -------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="moa-bench --offline-horizon", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--offline-horizon", default="8,16,32", help="kept tokens reported at these horizons (8,16,32)")
    p.add_argument("--cuts", default="8,32,64", help="cut after these many answer tokens (default 8,32,64)")
    p.add_argument("--method", default=DEFAULT_METHODS, help=f"comma-separated (default {DEFAULT_METHODS})")
    p.add_argument("--dataset", default="sharegpt-heldout", help="humaneval | sharegpt-heldout | FILE.jsonl")
    p.add_argument("--limit", type=int, default=20, help="number of prompts (default 20)")
    p.add_argument(
        "--skip", type=int, default=0, help="leave out the dataset's first N prompts (disjoint from an earlier run's)"
    )
    p.add_argument("--target", default=None, help="smollm2 (default) | gemma3-270m | DIR | FILE.gguf | hub id")
    p.add_argument("--device", default="auto", choices=DEVICE_CHOICES)
    p.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--offline-model", type=Path, help="the gguf method's model (default: the bundled SmolLM2 GGUF)")
    p.add_argument("--gguf-threads", type=int, default=1, help="llama.cpp threads (default 1, as the engine)")
    p.add_argument("--no-target-state", action="store_true", help="skip the drafts' with-target-state reference")
    p.add_argument("--checkpoint", action="append", default=[], metavar="NAME=DIR", help="as in moa-bench")
    p.add_argument("--json", type=Path, help="write the results here")
    return p


def parse_config(args: argparse.Namespace) -> HorizonConfig:
    from drafts.bench.cli import register_checkpoints  # the moa-bench rule, one home

    register_checkpoints(args.checkpoint)
    methods = tuple(dict.fromkeys(m.strip() for m in args.method.split(",") if m.strip()))
    for m in methods:
        if m not in (GGUF, TARGET):
            drafter_spec(m)  # a clear error for an unknown name
    return HorizonConfig(
        methods, _ints(args.offline_horizon, "--offline-horizon"), _ints(args.cuts, "--cuts"), not args.no_target_state
    )


def _ints(text: str, flag: str) -> tuple[int, ...]:
    try:
        return tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError as exc:
        raise ConfigError(f"{flag} takes comma-separated integers (e.g. 8,16,32), got {text!r}") from exc


def gguf_path(args: argparse.Namespace) -> Path:
    if args.offline_model is not None:
        return Path(args.offline_model)
    from drafts.locations import smollm2_gguf

    return smollm2_gguf()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    continuers: list[Continuer] = []
    try:
        config = parse_config(args)
        device = resolve_device(args.device)
        runner = TargetRunner(load_target(args.target, device, resolve_dtype(args.dtype, device)))
        from drafts.bench.cli import fitting_prompts

        dataset = load_prompts(args.dataset, skip=args.skip)
        prompts, skipped = fitting_prompts(runner, dataset, args.limit, config.answer_tokens)
        path = gguf_path(args) if GGUF in config.methods else None
        for m in config.methods:
            continuers.append(build_continuer(ContinuerSpec(m, path, args.gguf_threads), runner))
        with tqdm(total=len(prompts), desc="offline-horizon", unit="prompt", file=sys.stderr) as bar:
            run = run_offline_horizon(runner, prompts, continuers, config, bar.update)
    except MoaError as exc:
        print(f"moa-bench: error: {exc}", file=sys.stderr)
        return 2
    finally:
        for c in continuers:
            c.close()
    result = {"config": _describe(args, config, runner, len(prompts), skipped, path)} | run.to_json()
    print(format_table(result))
    if args.json:
        write_json(args.json, result)
    return 0


def _describe(
    args: argparse.Namespace, config: HorizonConfig, runner: TargetRunner, n: int, skipped: list[str], gguf: Path | None
) -> dict[str, Any]:
    from drafts.drafters.registry import checkpoint_for

    drafts = [m for m in config.methods if m not in (GGUF, TARGET)]
    return {
        "mode": "offline-horizon",
        "methods": list(config.methods),
        "horizons": list(config.horizons),
        "cuts": list(config.cuts),
        "dataset": args.dataset,
        "skip": args.skip,
        "prompts": n,
        "skipped_prompts": skipped,
        "temperature": 0.0,
        "checkpoints": {m: str(checkpoint_for(m, runner)) for m in drafts},
        "offline_model": str(gguf) if gguf else None,
        **run_environment(runner),
    }


def format_table(result: dict[str, Any]) -> str:
    """Mean kept tokens (share of the horizon) per method and horizon, survival at depths 1-4, and
    the drafts' diagnostics: kept with the target's state, accuracy by depth with the target's tokens."""
    horizons = [str(h) for h in result["config"]["horizons"]]
    longest = horizons[-1]
    depths = [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= int(longest)]
    head = [
        "method",
        "n",
        *(f"kept@{h}" for h in horizons),
        *(f"re-sync@{h}" for h in horizons),
        "alive at depth 1/2/3/4",
        f"kept@{longest} with target state",
        f"accuracy at depth {'/'.join(map(str, depths))} with target tokens",
    ]
    lines = [" | ".join(head)]
    for name, m in result["methods"].items():
        off, state, tokens = m["offline"], m["with_target_state"], m.get("with_target_tokens")
        kept = [f"{off['kept'][h]:.2f} ({100 * off['fraction'][h]:.0f}%)" for h in horizons]
        resync = m.get("offline_resync")
        kept += [f"{resync['kept'][h]:.2f} ({100 * resync['fraction'][h]:.0f}%)" if resync else "-" for h in horizons]
        alive = "/".join(f"{s:.2f}" for s in off["survival_by_depth"][:4])
        state_text = f"{state['kept'][longest]:.2f}" if state else "-"
        by_depth = tokens["token_accuracy_by_depth"] if tokens else None
        tokens_text = "/".join(f"{by_depth[d - 1]:.2f}" for d in depths) if by_depth else "-"
        lines.append(" | ".join([name, str(off["samples"]), *kept, alive, state_text, tokens_text]))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
