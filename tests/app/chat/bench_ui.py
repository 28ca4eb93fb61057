"""The UI benchmark (not a test): synthetic answers streamed at 50, 200 and 1,000 tokens/s into the app.

    python -m tests.app.chat.bench_ui [--seconds 5] [--json out.json]

For each rate the scripted engine writes for ``--seconds`` while a keystroke is typed into the
input every 50 ms. Reported per rate:
- frame: the time of each screen update (compositing the dirty regions and turning them into the
  terminal's bytes; headless Textual skips the bytes, so they are produced here too);
- layout: the time of each layout pass (a reply grew, a paragraph was added);
- stall: how late a 1 ms ticker on the app's loop ran, i.e. the longest the app could not react;
- echo: from a keystroke posted to the input until a frame that shows it was drawn;
- after_answer: the longest frame or layout once the answer is done (the reply becomes Markdown);
- *_cpu: frame and layout on the UI thread's CPU clock: what they cost without other processes
  taking the cores (wall-clock times on a shared machine include waiting for a core).
All but the last are taken while the answer streams.
Goal (issue 10): no frame over 50 ms, and keystrokes still echo at 1,000 tokens/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual import events
from textual._compositor import CompositorUpdate
from textual.app import App
from textual.screen import Screen

from app.chat.prompt import PromptInput
from app.settings import Settings
from tests.app.chat.pilot import SIZE, answering, make_app, send, until
from tests.app.chat.scripted_engine import ScriptedEngine

RATES = (50, 200, 1000)
KEY_EVERY_S = 0.05


def synthetic_answer(words: int) -> str:
    """A long Markdown-ish answer: paragraphs of ~60 words, a code fence every fifth paragraph."""
    out: list[str] = []
    for index in range(words):
        out.append(f"word{index % 97}")
        if index % 60 == 59:
            out.append("\n\n```python\nx = 1\n```\n\n" if index % 300 == 299 else "\n\n")
    return " ".join(out)


@dataclass
class Meter:
    frames: list[float] = field(default_factory=list)  # seconds
    layouts: list[float] = field(default_factory=list)
    frames_cpu: list[float] = field(default_factory=list)  # the same on the UI thread's CPU clock
    layouts_cpu: list[float] = field(default_factory=list)
    stalls: list[float] = field(default_factory=list)
    echoes: list[float] = field(default_factory=list)
    frame_done: Callable[[], None] = lambda: None
    streaming: Callable[[], bool] = lambda: True
    after: list[float] = field(default_factory=list)  # frames and layouts once the answer is done (Markdown)

    def install(self) -> Callable[[], None]:
        """Time Textual's screen updates and layout passes; returns the undo."""
        refresh, layout, display = Screen._compositor_refresh, Screen._refresh_layout, App._display
        meter = self

        def timed_refresh(screen: Screen[Any]) -> None:
            start, cpu = time.perf_counter(), time.thread_time()
            refresh(screen)
            (meter.frames if meter.streaming() else meter.after).append(time.perf_counter() - start)
            if meter.streaming():
                meter.frames_cpu.append(time.thread_time() - cpu)
            meter.frame_done()

        def timed_layout(screen: Screen[Any], *args: Any, **kwargs: Any) -> None:
            start, cpu = time.perf_counter(), time.thread_time()
            layout(screen, *args, **kwargs)
            (meter.layouts if meter.streaming() else meter.after).append(time.perf_counter() - start)
            if meter.streaming():
                meter.layouts_cpu.append(time.thread_time() - cpu)

        def display_bytes(app: App[Any], screen: Screen[Any], renderable: Any) -> None:
            if app.is_headless and isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)  # what a real terminal would be sent
            display(app, screen, renderable)

        Screen._compositor_refresh = timed_refresh  # type: ignore[method-assign]
        Screen._refresh_layout = timed_layout  # type: ignore[method-assign]
        App._display = display_bytes  # type: ignore[method-assign]

        def undo() -> None:
            Screen._compositor_refresh = refresh  # type: ignore[method-assign]
            Screen._refresh_layout = layout  # type: ignore[method-assign]
            App._display = display  # type: ignore[method-assign]

        return undo


async def tick(meter: Meter, stop: asyncio.Event) -> None:
    """A 1 ms ticker: how late it wakes is how long the loop was busy with something else."""
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.001)
        if meter.streaming():
            meter.stalls.append(time.perf_counter() - start - 0.001)


async def type_keys(meter: Meter, prompt: PromptInput, stop: asyncio.Event) -> None:
    """A keystroke every 50 ms; its echo is the first frame drawn after the input holds it."""
    while not stop.is_set():
        expected = len(prompt.text) + 1
        posted = time.perf_counter()
        seen = asyncio.Event()

        def frame_done(expected: int = expected, posted: float = posted, seen: asyncio.Event = seen) -> None:
            if not seen.is_set() and len(prompt.text) >= expected:
                meter.echoes.append(time.perf_counter() - posted)
                seen.set()

        meter.frame_done = frame_done
        prompt.post_message(events.Key("x", "x"))
        try:
            await asyncio.wait_for(seen.wait(), 2.0)
        except TimeoutError:
            meter.echoes.append(2.0)
        await asyncio.sleep(KEY_EVERY_S)


async def measure(rate: int, seconds: float, home: Path) -> dict[str, Any]:
    answer = synthetic_answer(int(rate * seconds))
    engine = ScriptedEngine(answer=answer, tokens_per_s=rate, stats_every=max(1, rate // 2))
    app = make_app(home, engine, settings=Settings(max_tokens=32768))
    meter = Meter(streaming=lambda: answering(app))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, f"stream at {rate} tokens/s")
        await until(pilot, lambda: len(engine.calls) == 1, 5)
        undo = meter.install()
        stop = asyncio.Event()
        tasks = [
            asyncio.create_task(tick(meter, stop)),
            asyncio.create_task(type_keys(meter, app.chat.query_one(PromptInput), stop)),
        ]
        started = time.perf_counter()
        await until(pilot, lambda: not answering(app), seconds * 4 + 30)
        elapsed = time.perf_counter() - started
        await pilot.pause(0.5)  # the finished reply turns into Markdown
        stop.set()
        await asyncio.gather(*tasks)
        undo()
        tokens = len(app.chat.query_one("#transcript").replies()[-1].reply.texts)  # type: ignore[attr-defined]
    return summarise(rate, tokens, elapsed, meter)


def _ms(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def summarise(rate: int, tokens: int, elapsed: float, meter: Meter) -> dict[str, Any]:
    return {
        "rate": rate,
        "tokens": tokens,
        "achieved_tokens_per_s": round(tokens / elapsed, 1),
        "frames_per_s": round(len(meter.frames) / elapsed, 1),
        "frame": _ms(meter.frames),
        "frame_cpu": _ms(meter.frames_cpu),
        "layout": _ms(meter.layouts),
        "layout_cpu": _ms(meter.layouts_cpu),
        "stall": _ms(meter.stalls),
        "echo": _ms(meter.echoes),
        "frames_over_50ms": sum(1 for f in meter.frames if f > 0.05),
        "frames_over_50ms_cpu": sum(1 for f in meter.frames_cpu if f > 0.05),
        "load_average": round(os.getloadavg()[0], 2),  # a busy machine stretches wall-clock times
        "after_answer_max_ms": round(max(meter.after, default=0.0) * 1000, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = []
    for rate in RATES:
        with tempfile.TemporaryDirectory() as home:
            result = asyncio.run(measure(rate, args.seconds, Path(home)))
        results.append(result)
        print(json.dumps(result), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
