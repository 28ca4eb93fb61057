"""Speed of the local engine against plain decoding of the same target, on this device.

    python -m app.engine.local_bench --tokens 64 --repeats 1
    python -m app.engine.local_bench --tokens 64 --linear dense   # the target on PyTorch's dense kernels

Each prompt is a one-turn chat; per prompt the methods run one after the other (interleaved,
so a machine that slows down mid-run slows every method alike): ``ar`` (plain decoding through
the core's runner), ``spec`` (the core's speculative loop with the draft, no engine), ``local``
(the LocalChatEngine with the draft, events and all) and ``local-ar`` (the engine without a
draft). ``local`` against ``spec`` and ``local-ar`` against ``ar`` is what the engine costs.
Each answer is timed by the caller, prefill included, on a fresh engine (no prefix reuse), in
wall-clock seconds and in CPU seconds of this process (steadier on a machine shared with other
jobs: time spent waiting for a core is not counted). The target and the draft load as ``moa-chat
--local`` loads them (the shipped checkpoint, int8 on a CPU, the packed target on a CPU in float32)
unless ``--draft-quantize`` / ``--linear`` say otherwise. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence

import torch

from app.engine.chat import Message
from app.engine.local_chat import LocalChatEngine
from app.engine.local_models import LocalConfig, load_models
from app.settings.draft import SHIPPED_KINDS, resolve_draft
from drafts.bench.environment import cpu_model
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.speculative import generate
from drafts.drafters.base import Drafter
from drafts.errors import MoaError
from drafts.target.default_shape import asked_shape, local_shape
from drafts.target.packed_linear import LINEAR_CHOICES
from drafts.target.runner import TargetRunner

PROMPTS = (
    "List the days of the week.",
    "Write a Python function that adds two numbers.",
    "Explain in two sentences why the sky is blue.",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.engine.local_bench", description=__doc__)
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per answer (each method)")
    parser.add_argument("--repeats", type=int, default=1, help="passes over the prompts")
    parser.add_argument("--draft", default="moa", help="the local engine's draft (a registry name)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument(
        "--chain", type=int, default=None, help="a chain of G drafted tokens per round (default: the app's shape)"
    )
    parser.add_argument("--confidence", type=float, default=0.0, help="end a chain below this draft confidence")
    parser.add_argument("--draft-quantize", default="int8", choices=("int8", "none"), help="as moa-chat's setting")
    parser.add_argument("--linear", default="auto", choices=LINEAR_CHOICES, help="the target's Linear layers")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    runner, drafter = load_models(local_config(args))
    shape = asked_shape(
        None, args.chain, args.confidence, lambda: local_shape(runner.device, runner.dtype, runner.linear)
    )
    decode = DecodeConfig(max_new_tokens=args.tokens, shape=shape)
    totals = {method: [0.0, 0.0, 0.0] for method in ("ar", "spec", "local", "local-ar")}  # tokens, wall s, CPU s
    for _ in range(args.repeats):
        for prompt in PROMPTS:
            for method, measured in run_prompt(runner, drafter, [Message("user", prompt)], decode).items():
                totals[method] = [a + b for a, b in zip(totals[method], measured, strict=True)]
    ran = {m: t for m, t in totals.items() if t[1]}
    result = {
        "tokens_per_s": {m: round(n / wall, 2) for m, (n, wall, _) in ran.items()},
        "tokens_per_cpu_s": {m: round(n / cpu, 2) for m, (n, _, cpu) in ran.items()},
        "new_tokens": {m: int(n) for m, (n, _, _) in ran.items()},
        "speedup_local_vs_ar": round(_speed(ran["local"], 1) / _speed(ran["ar"], 1), 3),
        "cpu_speedup_local_vs_ar": round(_speed(ran["local"], 2) / _speed(ran["ar"], 2), 3),
        "prompts": len(PROMPTS) * args.repeats,
        "draft": args.draft,
        "shape": decode.shape.describe(),
        "draft_quantize": args.draft_quantize,
        "linear": runner.linear,
        "device": str(runner.device),
        "threads": torch.get_num_threads(),
        "cpu": cpu_model(),
    }
    print(json.dumps(result, indent=2))
    return 0


def local_config(args: argparse.Namespace) -> LocalConfig:
    """The engine's configuration as moa-chat --local builds it (a shipped kind resolves to its checkpoint)."""
    choice = resolve_draft(args.draft, "smollm2") if args.draft in SHIPPED_KINDS else None
    return LocalConfig(
        draft=args.draft,
        checkpoint=choice.checkpoint if choice else None,
        device=args.device,
        int8_on_cpu=args.draft_quantize == "int8",
        linear=args.linear,
    )


def _speed(total: list[float], clock: int) -> float:
    return total[0] / total[clock]


def run_prompt(
    runner: TargetRunner, drafter: Drafter | None, messages: Sequence[Message], decode: DecodeConfig
) -> dict[str, tuple[int, float, float]]:
    """(new tokens, wall seconds, CPU seconds of this process) of each method on one chat."""
    prompt = runner.format_chat(messages)
    results = {"ar": _timed(lambda: len(generate_autoregressive(runner, prompt, decode).tokens))}
    if drafter is not None:
        results["spec"] = _timed(lambda: len(generate(runner, drafter, prompt, decode).tokens))
    local, local_ar = LocalChatEngine.of(runner, drafter), LocalChatEngine.of(runner, None)
    results["local"] = _timed(lambda: asyncio.run(_engine_answer(local, messages, decode)))
    results["local-ar"] = _timed(lambda: asyncio.run(_engine_answer(local_ar, messages, decode)))
    return results


def _timed(answer: Callable[[], int]) -> tuple[int, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    tokens = answer()
    return tokens, time.perf_counter() - wall, time.process_time() - cpu


async def _engine_answer(engine: LocalChatEngine, messages: Sequence[Message], decode: DecodeConfig) -> int:
    """One answer's new tokens (the models are loaded already: opening costs nothing)."""
    await engine.open()
    finished = await engine.generate(messages, decode)
    await engine.close()
    return len(finished.tokens)


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except MoaError as exc:  # a bad flag, a missing model: one line, no traceback
        print(f"local_bench: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
