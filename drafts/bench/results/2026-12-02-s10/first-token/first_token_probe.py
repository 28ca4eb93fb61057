"""Where MoA's first token spends its time on 4g: the prompt's Prefill chunks, the first Verify, the draft's intake.

For each prompt (cold start, MoA round-based, chain 4, this code: the intake queued), times since the
generation began: each Prefilled reply's arrival, the first Verify's reply, the first token shown, and
the end of the draft's intake of the prompt. Run from the repository root, pinned to one core:

    taskset -c 0 python3 drafts/bench/results/2026-12-02-s10/first-token/first_token_probe.py humaneval 3 OUT.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from app.bench.cli import _client_draft, _free_port, _server
from app.engine.config import EngineConfig, LinkConfig
from app.engine.generation import Generation
from app.engine.intake import Intake
from app.engine.session import VerifierSession
from app.engine.sync import EngineThread
from drafts.data.prompts import load_prompts
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.net import ShaperThread, preset
from drafts.target.device import default_dtype, resolve_device
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner

DECODE = DecodeConfig(max_new_tokens=8, shape=DraftShape(gamma=4))
marks: dict[str, Any] = {}  # the running generation's times (one at a time)
_start, _take, _prefill = Generation.start, Intake.take, VerifierSession.prefill


def _now() -> float:
    return time.perf_counter() - marks["t0"]


async def start(self: Generation, settle: bool = True) -> None:
    marks.update(t0=self.transcript.started, chunks=[], intake_done=None)
    await _start(self, settle)


async def take(self: Intake, start: int, tokens: list[int], reply: Any) -> None:
    marks["chunks"].append({"tokens": len(tokens), "reply_s": _now()})
    await _take(self, start, tokens, reply)
    self.queued[-1].add_done_callback(lambda _: marks.update(intake_done=_now()))


async def prefill(self: VerifierSession, tokens: list[int], *args: Any, **kwargs: Any) -> Any:
    reply = await _prefill(self, tokens, *args, **kwargs)
    if kwargs.get("then") is not None:
        marks["first_verify_reply_s"] = _now()
    return reply


def main(argv: list[str]) -> None:
    dataset, limit, out = argv[0], int(argv[1]), Path(argv[2])
    torch.set_num_threads(1)
    Generation.start, Intake.take, VerifierSession.prefill = start, take, prefill  # type: ignore[method-assign]
    device = resolve_device("cpu")
    runner = TargetRunner(load_target(None, device, default_dtype(device)))
    prompts = [runner.format_chat(p.messages) for p in load_prompts(dataset, limit)]
    port, rows = _free_port(), []
    server = argparse.Namespace(device="cpu", target=None, server_max_tree=None, server_cpus=None)
    with _server(server, runner, port), ShaperThread(upstream_port=port, profile=preset("4g")) as shaper:
        config = EngineConfig(LinkConfig(f"ws://127.0.0.1:{shaper.port}"), gamma_min=4, gamma_max=4)
        with EngineThread(config, _client_draft(runner, "moa")) as engine:
            engine.generate(prompts[0], DecodeConfig(max_new_tokens=4))  # warm up
            for prompt in prompts:
                engine.forget()
                finished = engine.generate(prompt, DECODE)
                row = {k: v for k, v in marks.items() if k != "t0"} | {"ttft_s": finished.stats.ttft_s}
                row["prompt_tokens"] = len(prompt)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    out.write_text(json.dumps({"dataset": dataset, "link": "4g", "rows": rows}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
