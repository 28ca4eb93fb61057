"""Measure what a user of moa-chat waits for: start time, time to first token, tokens/s per mode and link.

    python -m app.demo.measure --max-tokens 128 --json results.json

For each mode (the demo at each link preset, ``demo-stream``: the demo with ``--stream``, ``--local``,
``--api``) it launches as ``moa-chat`` does, answers the same prompts greedily, one conversation per
prompt, and reports the start time and, per answer, tokens/s, time to first token and tau (medians
printed, every answer in the JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from app.headless import Answer, conversation
from app.launch import launch
from app.settings import Settings

STREAM = "-stream"  # a mode with this suffix (demo-stream) runs with --stream
PROMPTS = (
    "Explain what a hash table is in a few sentences.",
    "Write a short poem about the sea.",
    "Give three tips for someone learning to cook.",
)


async def run_answers(
    launched: Any, settings: Settings, presets: list[str], prompts: list[str]
) -> tuple[float, list[dict]]:
    """(seconds ``open()`` took, one row per answer)."""
    rows = []
    started = time.perf_counter()
    await launched.engine.open()
    open_s = time.perf_counter() - started
    try:
        for name in presets:
            if launched.link is not None and name != "-":
                await asyncio.to_thread(launched.link.set_preset, name)
            for prompt in prompts:
                result = Answer()
                async for event in launched.engine.stream(conversation(settings, prompt), settings.decode_config()):
                    result.apply(event)
                rows.append({"link": name, "prompt": prompt, "tokens": len(result.token_ids), **result.stats()})
    finally:
        await launched.engine.close()
    return open_s, rows


def settings_for(mode: str, presets: list[str], max_tokens: int, device: str, draft: str) -> Settings:
    """A mode's settings: ``demo-stream`` is the demo with ``stream`` on; the demo starts on the first preset."""
    base = mode.removesuffix(STREAM)
    link = presets[0] if base == "demo" else "lan"
    return Settings(mode=base, max_tokens=max_tokens, device=device, link=link, draft=draft, stream=mode != base)


def measure(mode: str, presets: list[str], prompts: list[str], max_tokens: int, device: str, draft: str) -> dict:
    settings = settings_for(mode, presets, max_tokens, device, draft)
    started = time.perf_counter()
    with launch(settings, lambda message: print(f"  {message}", file=sys.stderr, flush=True)) as launched:
        launch_s = time.perf_counter() - started
        links = presets if settings.mode == "demo" else ["-"]
        open_s, rows = asyncio.run(run_answers(launched, settings, links, prompts))
    # start = until the first message could be sent: launch (demo verifier, draft) + open (local models, GGUF)
    return {
        "mode": mode,
        "draft": settings.draft if settings.mode != "api" else "none",
        "start_s": round(launch_s + open_s, 2),
        "launch_s": round(launch_s, 2),
        "answers": rows,
    }


def summary(result: dict) -> list[str]:
    lines = []
    for link in dict.fromkeys(row["link"] for row in result["answers"]):
        rows = [row for row in result["answers"] if row["link"] == link]
        median = {key: statistics.median(row[key] or 0.0 for row in rows) for key in ("tokens_per_s", "ttft_s", "tau")}
        lines.append(
            f"{result['mode']:11} {result['draft']:5} {link:4} start {result['start_s']:6.1f} s  "
            f"tokens/s {median['tokens_per_s']:6.1f}  "
            f"first token {median['ttft_s']:5.2f} s  tau {median['tau']:4.2f}  ({len(rows)} answers, "
            f"{sum(row['tokens'] for row in rows)} tokens)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m app.demo.measure", description=__doc__)
    p.add_argument("--modes", default="demo,local,api", help="demo, demo-stream (the demo with --stream), local, api")
    p.add_argument("--presets", default="lan,4g,3g", help="the demo's links, in order")
    p.add_argument("--prompts", type=int, default=len(PROMPTS), help=f"how many of the {len(PROMPTS)} prompts")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--device", default="cpu")
    p.add_argument("--draft", default="moa", help="moa, eagle, independent, none (local: the target alone)")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    prompts = list(PROMPTS[: args.prompts])
    results = []
    for mode in args.modes.split(","):
        print(f"{mode}:", file=sys.stderr, flush=True)
        results.append(measure(mode, args.presets.split(","), prompts, args.max_tokens, args.device, args.draft))
        for line in summary(results[-1]):
            print(line, flush=True)
    if args.json is not None:
        machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}
        args.json.write_text(json.dumps({"machine": machine, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
