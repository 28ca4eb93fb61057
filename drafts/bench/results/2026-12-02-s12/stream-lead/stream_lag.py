"""Session 12 (H1): how late a speculative stream's proposals reach the server, from the server's own log.

A moa-server runs in a subprocess (``--server-cpus``: pinned, as moa-bench's split run) with
:class:`server_stub.proposals.ProposalBox` wrapped to log, with the system-wide monotonic clock:

    put    a Propose arrived: its base (the session index of the root it was drafted from)
    step   a server step began: its root's index c, the base of the newest proposal the box held,
           the nodes of it that applied (what the step verified)

The client (this process, core 0) streams each prompt through a link shaper with each method (one
engine each, interleaved per prompt, cold starts, T = 0) and checks the output against ``ar``.
From the log, per link and method:

    step lag     c - base of the proposal a step held (what the step had to have been spelled)
    first use    per proposal, the lag at the first step that began after it arrived: how many of
                 the server's tokens it had to guess before any of it could apply
    tau          tokens per server step; applied share; drafted tokens accepted per step
    step ms      the server's step (step start to step start)

    taskset -c 0 python3 drafts/bench/results/2026-12-02-s12/stream-lead/stream_lag.py \
        --server-cpus 1 --links lan,4g --methods "moa-stream~1@1 moa-stream~1 moa-stream" --json OUT.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TextIO

import torch

from app.bench.methods import engine_config, with_stream_options
from app.engine.client_draft import ClientDraft
from app.engine.sync import EngineThread
from drafts.data.prompts import load_prompts
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.locations import shipped_checkpoint
from drafts.net import ShaperThread, preset
from drafts.neural.checkpoint import draft_id, load_draft
from drafts.neural.drafter import NeuralDrafter
from drafts.protocol import Propose
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree

LAGS = 5  # lag 0, 1, 2, 3, 4+


# -- the server's side (``--serve LOG -- moa-server's arguments``) ------------------------------------
def serve(log_path: Path, argv: list[str]) -> int:
    """moa-server with its proposal boxes logging to ``log_path`` (JSON lines)."""
    from server_stub.cli import main as server_main
    from server_stub.proposals import ProposalBox

    log = log_path.open("a", buffering=1)
    put, step_tree = ProposalBox.put, ProposalBox.step_tree

    def logged_put(self: ProposalBox, proposal: Propose) -> None:
        put(self, proposal)
        _write(log, {"ev": "put", "t": time.perf_counter(), "box": id(self), "base": proposal.base})

    def logged_step_tree(
        self: ProposalBox, tokens: Sequence[int], start: int, limit: int, max_depth: int
    ) -> DraftTree:
        kept = step_tree(self, tokens, start, limit, max_depth)
        base = None if self.newest is None else self.newest.base
        row = {"ev": "step", "t": time.perf_counter(), "box": id(self), "root": start + len(tokens) - 1}
        _write(log, row | {"base": base, "applied": kept.size})
        return kept

    ProposalBox.put = logged_put  # type: ignore[method-assign]
    ProposalBox.step_tree = logged_step_tree  # type: ignore[method-assign]
    sys.argv = ["moa-server", *argv]
    return server_main(argv)


def _write(log: TextIO, row: dict[str, Any]) -> None:
    log.write(json.dumps(row) + "\n")


# -- the client's side -------------------------------------------------------------------------------
@contextmanager
def logging_server(args: argparse.Namespace, runner: TargetRunner, log: Path) -> Iterator[int]:
    """This script as a logging moa-server on a free port, pinned to ``--server-cpus``; yields the port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    moa = shipped_checkpoint(runner.fingerprint.name, "moa")
    command = [sys.executable, __file__, "--serve", str(log), "--", "--port", str(port), "--device", "cpu"]
    command += ["--draft-checkpoint", str(moa), "--log-level", "warning", "--max-tree", "64"]
    cpus = {int(c) for c in args.server_cpus.split(",")}
    process = subprocess.Popen(command, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    try:
        for _ in range(240):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.25)
        yield port
    finally:
        process.terminate()
        process.wait(30)


def read_log(log: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The log's rows from byte ``offset`` on, and the new offset."""
    with log.open() as f:
        f.seek(offset)
        text = f.read()
        return [json.loads(line) for line in text.splitlines() if line.strip()], offset + len(text.encode())


def lag_figures(rows: list[dict[str, Any]], answer_len: int) -> dict[str, Any]:
    """One stream's figures from its server rows (one proposing Generate: the box with the most steps)."""
    boxes: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        boxes.setdefault(row["box"], []).append(row)
    mine = max(boxes.values(), key=lambda r: sum(x["ev"] == "step" for x in r))
    steps = [r for r in mine if r["ev"] == "step"]
    puts = [r for r in mine if r["ev"] == "put"]
    step_lags = [min(s["root"] - s["base"], LAGS - 1) for s in steps if s["base"] is not None]
    first_use = []
    for p in puts:
        later = next((s for s in steps if s["t"] > p["t"]), None)
        if later is not None:
            first_use.append(min(later["root"] - p["base"], LAGS - 1))
    accepted = [b["root"] - a["root"] - 1 for a, b in zip(steps, steps[1:], strict=False)]
    gaps = [b["t"] - a["t"] for a, b in zip(steps, steps[1:], strict=False)]
    return {
        "steps": len(steps),
        "tau": answer_len / max(len(steps), 1),
        "step_lag": [step_lags.count(k) for k in range(LAGS)],
        "first_use_lag": [first_use.count(k) for k in range(LAGS)],
        "applied_steps": sum(s["applied"] > 0 for s in steps),
        "accepted": sum(accepted),
        "step_ms_median": 1e3 * statistics.median(gaps) if gaps else None,
        "proposals": len(puts),
    }


def summed(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per link and method: the prompts' figures together."""
    steps = sum(r["steps"] for r in runs)
    return {
        "prompts": len(runs),
        "steps": steps,
        "tau": sum(r["tau"] * r["steps"] for r in runs) / max(steps, 1),
        "step_lag_0_1_2_3_4+": [sum(r["step_lag"][k] for r in runs) for k in range(LAGS)],
        "first_use_lag_0_1_2_3_4+": [sum(r["first_use_lag"][k] for r in runs) for k in range(LAGS)],
        "applied_share": sum(r["applied_steps"] for r in runs) / max(steps, 1),
        "accepted_per_step": sum(r["accepted"] for r in runs) / max(steps, 1),
        "step_ms_median": statistics.median(r["step_ms_median"] for r in runs if r["step_ms_median"]),
        "client_draft_ms": statistics.mean(r["tally"]["draft_ms"] for r in runs if r["tally"]),
        "client_led_per_proposal": statistics.mean(r["tally"].get("led_per_proposal", 1) for r in runs if r["tally"]),
        "client_rtt_ms": [r["rtt_ms"] for r in runs],
        "tok_s": sum(r["tokens"] for r in runs) / sum(r["seconds"] for r in runs),
        "identical": all(r["identical"] for r in runs),
    }


def table(paths: list[str]) -> None:
    """The README's lag table from ``--json`` files (``stream_lag.py --table FILES``)."""
    print("| file | link | method | steps | tau | step lag 0/1/2/3/4+ | first use 0/1/2/3/4+ | applied share "
          "| accepted / step | server step ms | draft ms | led | = ar |")  # fmt: skip
    print("|" + " --- |" * 13)
    for path in paths:
        for name, r in json.loads(Path(path).read_text())["summary"].items():
            link, method = name.split(" ", 1)
            lags = "/".join(map(str, r["step_lag_0_1_2_3_4+"]))
            first = "/".join(map(str, r["first_use_lag_0_1_2_3_4+"]))
            led = r.get("client_led_per_proposal", 1.0)
            print(f"| {Path(path).stem} | {link} | {method} | {r['steps']} | {r['tau']:.2f} | {lags} | {first} "
                  f"| {r['applied_share']:.2f} | {r['accepted_per_step']:.2f} | {r['step_ms_median']:.0f} "
                  f"| {r['client_draft_ms']:.0f} | {led:.2f} | {r['identical']} |")  # fmt: skip


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        return serve(Path(sys.argv[2]), sys.argv[4:])
    if len(sys.argv) > 2 and sys.argv[1] == "--table":
        table(sys.argv[2:])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="sharegpt-heldout")
    p.add_argument("--limit", type=int, default=3)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--chain", type=int, default=4)
    p.add_argument("--links", default="lan,4g")
    p.add_argument("--methods", default="moa-stream~1@1 moa-stream~1 moa-stream")
    p.add_argument("--server-cpus", default="1")
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    torch.set_num_threads(1)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    checkpoint = shipped_checkpoint(runner.fingerprint.name, "moa")
    decode = DecodeConfig(max_new_tokens=args.max_new_tokens, shape=DraftShape(gamma=args.chain))
    prompts = [runner.format_chat(q.messages) for q in load_prompts(args.dataset, args.limit)]
    answers = [generate_autoregressive(runner, q, decode).tokens for q in prompts]
    methods = args.methods.split()
    log = args.json.with_suffix(".server.jsonl")
    log.unlink(missing_ok=True)
    log.touch()
    result: dict[str, Any] = {"config": vars(args) | {"json": str(args.json)}, "runs": {}, "summary": {}}
    with logging_server(args, runner, log) as port:
        for link in args.links.split(","):
            runs = run_link(args, runner, checkpoint, port, link, methods, prompts, answers, log, decode)
            for method, rows in runs.items():
                result["runs"][f"{link} {method}"] = rows
                result["summary"][f"{link} {method}"] = summed(rows)
                print(link, method, json.dumps(result["summary"][f"{link} {method}"]), flush=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


def run_link(
    args: argparse.Namespace,
    runner: TargetRunner,
    checkpoint: Path,
    port: int,
    link: str,
    methods: list[str],
    prompts: list[list[int]],
    answers: list[list[int]],
    log: Path,
    decode: DecodeConfig,
) -> dict[str, list[dict[str, Any]]]:
    """Every prompt with every method (rotating order) over one shaped link."""
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
    with ExitStack() as stack:
        shaper = stack.enter_context(ShaperThread(upstream_port=port, profile=preset(link)))
        engines = {}
        for m in methods:
            config = with_stream_options(engine_config(shaper.port, chain=args.chain, stream=True), m)
            draft = ClientDraft.of(NeuralDrafter(load_draft(checkpoint, runner)), draft_id(checkpoint), runner)
            engines[m] = stack.enter_context(EngineThread(config, draft))
            engines[m].generate(prompts[0], DecodeConfig(max_new_tokens=4))  # warm up
        offset = read_log(log, 0)[1]
        for i, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
            for m in methods[i % len(methods) :] + methods[: i % len(methods)]:
                engines[m].forget()
                started = time.perf_counter()
                finished = engines[m].generate(prompt, decode)
                seconds = time.perf_counter() - started
                time.sleep(0.2)  # the server's last rows are written
                rows, offset = read_log(log, offset)
                figures = lag_figures(rows, len(finished.tokens))
                tally = finished.stats.proposals
                figures |= {
                    "identical": list(finished.tokens) == answer,
                    "tokens": len(finished.tokens),
                    "seconds": seconds,
                    "rtt_ms": finished.stats.rtt_ms,
                    "tally": None if tally is None else tally.to_json(),
                }
                runs[m].append(figures)
    return runs


if __name__ == "__main__":
    sys.exit(main())
