"""``moa-bench-remote`` (also ``moa-bench --remote``): the remote engine over shaped links, in one run.

    moa-bench-remote --link lan,wifi,4g,3g --method moa,eagle,independent --limit 5 \
                     --max-new-tokens 128 --cut-after 16 --cut-tokens 32 --json remote.json
    moa-bench-remote --dataset sharegpt-heldout --turns 5 --link lan,4g --method moa,api \
                     --cut-tokens 0 --json chats.json     # chats: per-turn cost of each answer

moa-server runs in a subprocess on 127.0.0.1 (``app`` never imports ``server_stub``), with the
target and the shipped MoA checkpoint's compressor; the drafts and the link shaper run here.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from app.bench.chats import load_chats
from app.bench.methods import draft_kind
from app.bench.remote import RemoteBenchConfig, run_remote_benchmark
from app.engine.client_draft import ClientDraft
from drafts.bench.environment import run_environment
from drafts.bench.report import write_json
from drafts.data.prompts import load_prompts
from drafts.drafters.base import DraftShape
from drafts.errors import ConfigError, MoaError
from drafts.locations import shipped_checkpoint, smollm2_gguf
from drafts.neural.checkpoint import draft_id, load_draft
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.kinds import compressed_kinds
from drafts.sampling import SamplingConfig
from drafts.target.device import DEVICE_CHOICES, default_dtype, resolve_device
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner

SERVER_START_S = 300.0  # loading the target in the server's process


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="moa-bench-remote", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--link", default="lan,wifi,4g,3g", help="comma-separated link presets (drafts.net)")
    p.add_argument(
        "--method",
        default="moa,eagle,independent,api",
        help="comma-separated: moa, eagle, independent, api; a draft kind + '-stream' (moa-stream) streams "
        "speculatively (the server decodes, the draft's proposals ride along), + ':noq' sends no q at T>0",
    )
    p.add_argument("--dataset", default="humaneval", help="humaneval | sharegpt-heldout | FILE.jsonl")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--turns", type=int, default=0, help="play each conversation as a chat of N user turns")
    p.add_argument("--chain", type=int, default=None, help="a fixed chain length G (default: paced per round)")
    p.add_argument("--tree", default=None, help="DEPTH,TOPK,TOTAL: EAGLE-2 dynamic trees instead of chains")
    p.add_argument("--confidence", type=float, default=0.0, help="chains stop below this draft confidence")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="seed of sampling at T>0")
    p.add_argument("--q-top-k", type=int, default=32, help="at T>0: proposal entries sent per drafted token")
    p.add_argument("--cut-after", type=int, default=16, help="disconnection study: cut after this many tokens")
    p.add_argument("--cut-tokens", type=int, default=32, help="... for this many offline tokens (0: no study)")
    p.add_argument("--cut-ms", type=float, default=10_000.0, help="... or this long at the latest")
    p.add_argument("--offline-model", type=Path, default=None, help="GGUF for the study's gguf row (default: bundled)")
    p.add_argument("--no-gguf", action="store_true", help="leave the gguf row out of the study")
    p.add_argument("--target", default=None, help="smollm2 (default) or another target with shipped drafts")
    p.add_argument("--device", default="auto", choices=DEVICE_CHOICES)
    p.add_argument("--port", type=int, default=0, help="moa-server's port (default: a free one)")
    p.add_argument(
        "--server-max-tree",
        type=int,
        default=None,
        help="moa-server's --max-tree (default: the server's own, 64 on a CPU); a bigger tree is cut to it",
    )
    p.add_argument(
        "--server-cpus",
        default=None,
        help="comma-separated CPU ids moa-server runs on (Linux), e.g. 1: a verifier with cores of its own, "
        "as on another machine (default: the same CPUs as this process)",
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads here (default: torch's choice)")
    p.add_argument("--json", type=Path, help="write the results here")
    return p


def parse_config(args: argparse.Namespace) -> RemoteBenchConfig:
    if args.limit < 1:
        raise ConfigError(f"--limit must be >= 1, got {args.limit}")
    offline_model = None if args.no_gguf else (args.offline_model or smollm2_gguf())
    return RemoteBenchConfig(
        links=_split(args.link),
        methods=_split(args.method),
        max_new_tokens=args.max_new_tokens,
        cut_after=args.cut_after,
        cut_tokens=args.cut_tokens,
        cut_ms=args.cut_ms,
        offline_model=offline_model,
        turns=args.turns,
        chain=args.chain,
        tree=DraftShape.parse_tree(args.tree) if args.tree else DraftShape(min_confidence=args.confidence),
        sampling=SamplingConfig(args.temperature, top_p=args.top_p, seed=args.seed),
        q_top_k=args.q_top_k,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    try:
        config = parse_config(args)
        device = resolve_device(args.device)
        runner = TargetRunner(load_target(args.target, device, default_dtype(device)))
        drafts = {m: _client_draft(runner, draft_kind(m)) for m in config.draft_methods}  # "moa:noq": its own copy
        chats = load_chats(args.dataset, args.limit, config.turns) if config.turns else None
        if chats is not None:
            prompts = [runner.format_chat([*([c.system] if c.system else []), c.users[0]]) for c in chats]
        else:
            prompts = [runner.format_chat(p.messages) for p in load_prompts(args.dataset, args.limit)]
        port = args.port or _free_port()
        with _server(args, runner, port):
            result = run_remote_benchmark(port, drafts, runner, prompts, config, _progress, chats)
    except MoaError as exc:
        print(f"moa-bench-remote: error: {exc}", file=sys.stderr)
        return 2
    result = {"config": _describe(args, config, runner, len(prompts)), **result}
    print(format_table(result))
    if args.json:
        write_json(args.json, result)
    return 0


def _client_draft(runner: TargetRunner, kind: str) -> ClientDraft:
    checkpoint = shipped_checkpoint(runner.fingerprint.name, kind)
    return ClientDraft.of(NeuralDrafter(load_draft(checkpoint, runner)), draft_id(checkpoint), runner)


class _server:
    """``python -m server_stub`` on 127.0.0.1:``port`` with the shipped MoA compressor, until exit."""

    def __init__(self, args: argparse.Namespace, runner: TargetRunner, port: int) -> None:
        moa = shipped_checkpoint(runner.fingerprint.name, compressed_kinds()[0])  # the kind with a server part
        self.port = port
        self.command = [sys.executable, "-m", "server_stub", "--port", str(port), "--device", args.device]
        self.command += ["--draft-checkpoint", str(moa), "--log-level", "warning"]
        self.command += ["--target", args.target] if args.target else []
        self.command += ["--max-tree", str(args.server_max_tree)] if args.server_max_tree else []
        self.cpus = _cpus(args.server_cpus)
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> _server:
        cpus = self.cpus
        pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))
        self.process = subprocess.Popen(self.command, preexec_fn=pin)
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ConfigError(f"moa-server exited with {self.process.returncode}: {' '.join(self.command)}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.25)
        self.__exit__()
        raise ConfigError(f"moa-server did not listen on port {self.port} within {SERVER_START_S:.0f} s")

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: the server closes cleanly
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _cpus(text: str | None) -> set[int] | None:
    """``--server-cpus``: the CPU ids, checked against this machine (None: not asked)."""
    if text is None:
        return None
    if not hasattr(os, "sched_setaffinity"):
        raise ConfigError("--server-cpus needs Linux (sched_setaffinity); leave it out on this system")
    try:
        cpus = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise ConfigError(f"--server-cpus takes CPU ids like 1 or 0,1, got {text!r}") from None
    usable = os.sched_getaffinity(0) | set(range(os.cpu_count() or 1))
    if not cpus or not cpus <= usable:
        raise ConfigError(f"--server-cpus {text!r}: this machine has CPUs {sorted(usable)}; pick among them")
    return cpus


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _progress(step: str) -> None:
    print(f"  {step}", file=sys.stderr, flush=True)


def _split(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(result: dict[str, Any]) -> str:
    """The links table, then the disconnection study."""
    head = f"{'link':<6} {'method':<12} {'tok/s':>7} {'ttft s':>7} {'fwd/100':>8} {'rt/100':>7} {'tau':>5} "
    head += f"{'B up/tok':>9} {'B dn/tok':>9} {'accept':>7} {'losses':>6}  =ar"
    lines = [head]
    for link, methods in result["links"].items():
        for m, r in methods.items():
            ttft = f"{r['ttft_s']:.3f}" if r["ttft_s"] is not None else "-"
            lines.append(
                f"{link:<6} {m:<12} {r['tokens_per_s']:>7.1f} {ttft:>7} {r['target_forwards_per_100']:>8.1f} "
                f"{r['round_trips_per_100']:>7.1f} {_rate(r.get('tau')):>5} "
                f"{r['bytes_up_per_token']:>9.0f} {r['bytes_down_per_token']:>9.0f} "
                f"{_rate(r.get('acceptance_rate')):>7} {r.get('link_losses', 0):>6}  {r['identical_to_ar']}"
            )
            for row in r.get("turns", []):
                lines.append(
                    f"{'':<6}   turn {row['turn']:<3} ttft {row['ttft_s']:.3f} s, prefill "
                    f"{row['prefill_tokens_sent']:.0f} tokens, {row['bytes_down_before_first_token']:.0f} B down first"
                )
    if result["disconnect"]:
        cfg = result.get("config", {})
        cut = f"cut after {cfg.get('cut_after')} tokens for {cfg.get('cut_tokens')} offline tokens"
        lines += ["", f"disconnection: {cut}"]
        lines.append(f"{'method':<12} {'offline':>8} {'kept':>6} {'prefix':>7}  =ar")
        for m, r in result["disconnect"].items():
            if r is None:
                lines.append(f"{m:<12} n/a")
                continue
            lines.append(
                f"{m:<12} {r['offline_tokens']:>8} {r['kept_after_repair']:>6} {r['match_prefix_len']:>7}  "
                f"{r['identical_to_ar']}"
            )
    return "\n".join(lines)


def _describe(args: argparse.Namespace, config: RemoteBenchConfig, runner: TargetRunner, n: int) -> dict[str, Any]:
    return {
        "links": list(config.links),
        "methods": list(config.methods),
        "draft_methods": list(config.draft_methods),
        "dataset": args.dataset,
        "prompts": n,
        "max_new_tokens": config.max_new_tokens,
        "temperature": config.sampling.temperature,
        "top_p": config.sampling.top_p,
        "seed": config.sampling.seed,
        "turns": config.turns,
        "chain": config.chain,
        "tree": args.tree,
        "server_max_tree": args.server_max_tree,
        "confidence": args.confidence,
        "cut_after": config.cut_after,
        "cut_tokens": config.cut_tokens,
        "cut_ms": config.cut_ms,
        "cut_link": config.cut_link,
        "offline_model": str(config.offline_model) if config.offline_model else None,
        **run_environment(runner),
    }
