"""Vectors later against the chunked Prefill, A/B in one process: each prompt by each arm, interleaved.

Separate `moa-bench --remote` runs meet a core 0 shared with other processes whose load changes
from run to run; here one process, one moa-server and one shaped link serve every arm, prompt by
prompt in a rotating order:

    later     this code: the prompt as one Prefill(later=True), the first Verify right behind it, the
              vectors fetched after the first token (app.engine.later)
    chunked   the fallback a server without ``Capabilities.later`` gets (the code before): the prompt in
              chunks of ~20 tokens, each reply with its vectors, the first Verify behind the last
              (VerifierSession.keeps_vectors patched to False)

for MoA round-based (moa), speculative streaming (moa-stream), and API streaming (api, no draft) as the
yardstick. Chain 4, T = 0, 64 new tokens, each prompt from a cold start; every output checked against
plain greedy decoding. Run from the repository root, pinned to one core:

    taskset -c 0 python3 drafts/bench/results/2026-12-02-s11/first-token/later_ab.py humaneval 3 4g OUT.json
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
from app.engine.session import VerifierSession
from app.engine.sync import EngineThread
from drafts.data.prompts import load_prompts
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.net import ShaperThread, preset
from drafts.target.device import default_dtype, resolve_device
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner

ARMS = ("moa later", "moa chunked", "moa-stream later", "moa-stream chunked", "api")
DECODE = DecodeConfig(max_new_tokens=64, shape=DraftShape(gamma=4))
_keeps_vectors = VerifierSession.keeps_vectors
CHUNKED = False  # which arm runs now (one generation at a time)


def _keeps(self: VerifierSession) -> bool:
    return not CHUNKED and bool(_keeps_vectors.fget(self))  # type: ignore[attr-defined]


def main(argv: list[str]) -> None:
    global CHUNKED
    dataset, limit, link_name, out = argv[0], int(argv[1]), argv[2], Path(argv[3])
    torch.set_num_threads(1)
    VerifierSession.keeps_vectors = property(_keeps)  # type: ignore[assignment,method-assign]
    device = resolve_device("cpu")
    runner = TargetRunner(load_target(None, device, default_dtype(device)))
    prompts = [runner.format_chat(p.messages) for p in load_prompts(dataset, limit)]
    references = [generate_autoregressive(runner, p, DECODE).tokens for p in prompts]
    port = _free_port()
    rows: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    server = argparse.Namespace(device="cpu", target=None, server_max_tree=None, server_cpus=None)
    with _server(server, runner, port), ShaperThread(upstream_port=port, profile=preset(link_name)) as shaper:
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
                    CHUNKED = arm.endswith("chunked")
                    engine = engines[arm.split()[0]]
                    engine.forget()
                    finished = engine.generate(prompt, DECODE)
                    rows[arm].append(_row(finished, references[i]))
                    print(arm, rows[arm][-1], file=sys.stderr)
        finally:
            for engine in engines.values():
                engine.stop()
    report = {
        "dataset": dataset,
        "prompts": limit,
        "link": link_name,
        "chain": 4,
        "max_new_tokens": 64,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "arms": {arm: _summary(r) for arm, r in rows.items()},
        "rows": rows,
    }
    out.write_text(json.dumps(report, indent=1))


def _row(finished: Finished, reference: list[int]) -> dict[str, Any]:
    s = finished.stats
    return {
        "ttft_s": s.ttft_s,
        "wall_s": s.wall_s,
        "new_tokens": s.new_tokens,
        "prefill_tokens": s.prefill_tokens,
        "round_trips": s.round_trips,
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
