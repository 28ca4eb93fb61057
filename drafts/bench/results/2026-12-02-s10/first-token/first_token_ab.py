"""The first token before the draft's intake, A/B in one process: each prompt by each arm, interleaved.

Separate `moa-bench --remote` runs of the old and the new code (before-*.json, after-*.json) met a core 0
shared with up to ten other processes, whose load changed from run to run. Here one process, one
moa-server and one 4g shaper serve both arms, prompt by prompt in a rotating order:

    queued    this code: the prompt's Prefilled chunks are queued on the draft's worker (app.engine.intake)
    awaited   the old behaviour: each chunk's intake is waited for before the next reply is read
              (Intake.take patched to settle at once), so the first token waits for the draft

for MoA round-based (moa), speculative streaming (moa-stream), and API streaming (api, no draft) as the
yardstick. Chain 4, T = 0, 64 new tokens, each prompt from a cold start; every output checked against
plain greedy decoding. Run from the repository root, pinned to one core:

    taskset -c 0 python3 drafts/bench/results/2026-12-02-s10/first-token/first_token_ab.py humaneval 3 OUT.json
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
from app.engine.draftless import Draftless
from app.engine.events import Finished
from app.engine.intake import Intake
from app.engine.sync import EngineThread
from drafts.data.prompts import load_prompts
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.net import ShaperThread, preset
from drafts.target.device import default_dtype, resolve_device
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner

ARMS = ("moa queued", "moa awaited", "moa-stream queued", "moa-stream awaited", "api")
DECODE = DecodeConfig(max_new_tokens=64, shape=DraftShape(gamma=4))
_queued_take = Intake.take
AWAITED = False  # which arm runs now (one generation at a time)


async def _take(self: Intake, start: int, tokens: list[int], reply: Any) -> None:
    await _queued_take(self, start, tokens, reply)
    if AWAITED:
        await self.settle()  # the old behaviour: the chunk is taken in before the next reply is read


def main(argv: list[str]) -> None:
    global AWAITED
    dataset, limit, out = argv[0], int(argv[1]), Path(argv[2])
    torch.set_num_threads(1)
    Intake.take = _take  # type: ignore[method-assign]
    device = resolve_device("cpu")
    runner = TargetRunner(load_target(None, device, default_dtype(device)))
    prompts = [runner.format_chat(p.messages) for p in load_prompts(dataset, limit)]
    references = [generate_autoregressive(runner, p, DECODE).tokens for p in prompts]
    port = _free_port()
    rows: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    server = argparse.Namespace(device="cpu", target=None, server_max_tree=None, server_cpus=None)
    with _server(server, runner, port), ShaperThread(upstream_port=port, profile=preset("4g")) as shaper:
        link = LinkConfig(f"ws://127.0.0.1:{shaper.port}")
        chain = EngineConfig(link, gamma_min=4, gamma_max=4)
        engines = {
            "moa": EngineThread(chain, _client_draft(runner, "moa")).start(),
            "moa-stream": EngineThread(
                EngineConfig(link, gamma_min=4, gamma_max=4, stream=True), _client_draft(runner, "moa")
            ).start(),
            "api": EngineThread(chain, Draftless.of(runner)).start(),
        }
        try:
            for engine in engines.values():
                engine.generate(prompts[0], DecodeConfig(max_new_tokens=4))  # warm up
            for i, prompt in enumerate(prompts):
                for arm in ARMS[i % len(ARMS) :] + ARMS[: i % len(ARMS)]:
                    AWAITED = arm.endswith("awaited")
                    engine = engines[arm.split()[0]]
                    engine.forget()
                    finished = engine.generate(prompt, DECODE)
                    rows[arm].append(_row(finished, references[i]))
                    print(arm, rows[arm][-1], file=sys.stderr)
        finally:
            for engine in engines.values():
                engine.stop()
    out.write_text(
        json.dumps(
            {
                "dataset": dataset,
                "prompts": limit,
                "link": "4g",
                "chain": 4,
                "max_new_tokens": 64,
                "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "arms": {arm: _summary(r) for arm, r in rows.items()},
                "rows": rows,
            },
            indent=1,
        )
    )


def _row(finished: Finished, reference: list[int]) -> dict[str, Any]:
    s = finished.stats
    return {
        "ttft_s": s.ttft_s,
        "wall_s": s.wall_s,
        "new_tokens": s.new_tokens,
        "identical_to_ar": list(finished.tokens) == reference,
    }


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tokens, wall = sum(r["new_tokens"] for r in rows), sum(r["wall_s"] for r in rows)
    after = sum(r["wall_s"] - r["ttft_s"] for r in rows)
    return {
        "tokens_per_s": tokens / wall,
        "ttft_s": sum(r["ttft_s"] for r in rows) / len(rows),
        "tokens_per_s_after_first": (tokens - len(rows)) / after,
        "identical_to_ar": all(r["identical_to_ar"] for r in rows),
    }


if __name__ == "__main__":
    main(sys.argv[1:])
