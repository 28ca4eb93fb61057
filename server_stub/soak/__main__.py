"""``python -m server_stub.soak``: soak a moa-server subprocess and print the figures as JSON (see the package)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from drafts.data.conversations import Turn
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from server_stub.soak.phases import burst, cancels, cuts
from server_stub.soak.process import ServerProcess
from server_stub.soak.scenarios import Setup, crowd, honest_check, malformed

PROMPTS = (
    "Write a haiku about the sea.",
    "Explain what a hash table is in two sentences.",
    "List three uses of copper.",
    "What is the capital of France, and why is it famous?",
    "Give me a short recipe for pancakes.",
    "Summarise the plot of Romeo and Juliet.",
    "How do I reverse a list in Python?",
    "Why is the sky blue?",
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m server_stub.soak", description=__doc__)
    p.add_argument("--target", default="smollm2", help="the target both the server and the references run")
    p.add_argument("--frames", type=int, default=10_000, help="malformed frames")
    p.add_argument("--clients", type=int, default=32, help="concurrent honest clients in the crowd phase")
    p.add_argument("--minutes", type=float, default=10.0, help="length of the crowd phase")
    p.add_argument("--cuts", type=int, default=100, help="random link cuts")
    p.add_argument("--cancels", type=int, default=20, help="Cancel / Bye during a Generate (half each)")
    p.add_argument("--burst", type=int, default=32, help="new connections at once in the burst phase")
    p.add_argument("--tokens", type=int, default=48, help="length of each prompt's greedy reference")
    p.add_argument("--cpu", type=int, default=None, help="pin the server to this core (taskset)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    p.add_argument("--log", type=Path, default=None, help="the server's log file (default: a temporary file)")
    return p


def references(target: str, tokens: int) -> tuple[TargetRunner, list[tuple[list[int], list[int]]]]:
    """The target in this process, and each prompt with its greedy continuation."""
    runner = TargetRunner(load_target(target, torch.device("cpu"), torch.float32))
    cases = []
    for text in PROMPTS:
        prompt = runner.format_chat([Turn("user", text)])
        reference = generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=tokens)).tokens
        if len(reference) >= 8:
            cases.append((prompt, reference))
    return runner, cases


async def soak(args: argparse.Namespace, setup: Setup, report: dict[str, Any]) -> None:
    def record(name: str, figures: dict[str, Any]) -> None:
        report[name] = figures
        print(json.dumps({name: figures}, default=str), flush=True)
        if args.out:
            args.out.write_text(json.dumps(report, indent=2, default=str))

    await honest_check(setup, setup.rng)  # warm up before the "before" figures
    record("before", {"rss_mb": round(setup.probe.rss_mb(), 1), "fds": setup.probe.fds()})
    record("malformed", await malformed(setup, args.frames))
    record("cancel", await cancels(setup, args.cancels))
    record("burst", await burst(setup, args.burst))
    record("cuts", await cuts(setup, args.cuts))
    record("crowd", await crowd(setup, args.clients, args.minutes * 60))
    await asyncio.sleep(2.0)
    record("after", {"rss_mb": round(setup.probe.rss_mb(), 1), "fds": setup.probe.fds(), **setup.probe.log_figures()})


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.time()
    runner, cases = references(args.target, args.tokens)
    log = args.log or Path(tempfile.mkdtemp(prefix="moa-soak-")) / "server.log"
    limits = ["--max-sessions", "256", "--max-sessions-per-client", "256", "--max-connections-per-client", "256"]
    server = ServerProcess(["--target", args.target, "--device", "cpu", *limits], log, args.cpu)
    report: dict[str, Any] = {
        "target": args.target,
        "server_log": str(log),
        "args": vars(args) | {"out": str(args.out)},
    }
    try:
        url = server.url()
        setup = Setup(url, runner.fingerprint.to_dict(), cases, int(runner.config.vocab_size), server.probe)
        setup.seed = args.seed
        asyncio.run(soak(args, setup, report))
    finally:
        code = server.stop()
        report["server_exit"] = code
        report["wall_s"] = round(time.time() - started, 1)
        if args.out:
            args.out.write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({"server_exit": code, "wall_s": report["wall_s"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
