"""``moa-chat --headless --prompt "..."``: one answer, no UI, in any mode; for scripts, smoke tests and CI.

Prints the answer on stdout and one line of statistics on stderr, or with ``--json`` one object
on stdout::

    {"text": ..., "tokens": 57, "token_ids": [...], "provenance": ["accepted", "target", ...],
     "stop": "eos", "engine": {"mode": "demo", ..., "stream": false},
     "stats": {"tau", "round_trips_per_100", "tokens_per_s", "ttft_s", "offline_tokens", "kept_after_repair",
               "kept_after_resync"}}

``provenance`` has one label per token of the answer: ``accepted`` (drafted here, confirmed),
``target`` (the target's own), ``offline`` (written offline, never verified) or ``repaired`` (a
token of a span the verifier replaced or confirmed after an offline spell). In the demo,
``--link PRESET`` sets the starting link and ``--link-after N:PRESET`` switches it once N tokens
are shown (``--link offline --link-after 20:lan``: written offline, then repaired).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from app.demo.link_control import LinkAfter, LinkControl
from app.engine.chat import ChatEngine, EngineInfo, Message
from app.engine.errors import EngineError
from app.engine.events import Finished, Repaired, StatsUpdated, TokenGenerated
from app.settings import Settings

REPAIRED = "repaired"


@dataclass
class Answer:
    """One answer as the events built it."""

    token_ids: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    last_stats: StatsUpdated | None = None
    finished: Finished | None = None
    first_token_s: float | None = None  # from the request, as this caller saw it

    def apply(self, event: object) -> None:
        if isinstance(event, TokenGenerated):
            self.token_ids.append(event.token)
            self.labels.append(event.source.value)
            self.texts.append(event.text)
        elif isinstance(event, Repaired):
            self.token_ids[event.start : event.end] = event.tokens
            self.labels[event.start : event.end] = [REPAIRED] * len(event.tokens)
            self.texts[event.start : event.end] = event.texts or [""] * len(event.tokens)
        elif isinstance(event, StatsUpdated):
            self.last_stats = event
        elif isinstance(event, Finished):
            self.finished = event

    @property
    def text(self) -> str:
        return self.finished.text if self.finished is not None and self.finished.text else "".join(self.texts)

    def stats(self) -> dict[str, Any]:
        assert self.finished is not None
        s = self.finished.stats
        if s.verify_rounds:  # tokens confirmed per target forward (API streaming: 1 per forward)
            tau = (s.accepted + s.target) / s.verify_rounds
        else:
            tau = self.last_stats.tau if self.last_stats is not None else 0.0
        return {
            "tau": round(tau, 3),
            "round_trips_per_100": round(100.0 * s.round_trips / max(s.new_tokens, 1), 2),
            "tokens_per_s": round(s.tokens_per_s, 2),
            "ttft_s": None if s.ttft_s is None else round(s.ttft_s, 3),
            "offline_tokens": s.offline_tokens,
            "kept_after_repair": s.kept_after_repair,
            "kept_after_resync": s.kept_after_resync,
            "shape": self.last_stats.shape if self.last_stats is not None else "",
        }

    def to_json(self, info: EngineInfo) -> dict[str, Any]:
        assert self.finished is not None
        return {
            "text": self.text,
            "tokens": len(self.token_ids),
            "token_ids": self.token_ids,
            "provenance": self.labels,
            "stop": None if self.finished.stop is None else self.finished.stop.value,
            "engine": info.__dict__,
            "stats": self.stats(),
        }


def conversation(settings: Settings, prompt: str) -> list[Message]:
    system = [Message("system", settings.system_prompt)] if settings.system_prompt else []
    return [*system, Message("user", prompt)]


async def answer(
    engine: ChatEngine,
    messages: list[Message],
    settings: Settings,
    link: LinkControl | None = None,
    link_after: LinkAfter | None = None,
) -> Answer:
    """Open the engine, stream one answer (switching the link once if asked), close it."""
    result = Answer()
    await engine.open()
    try:
        started = time.perf_counter()
        async for event in engine.stream(messages, settings.decode_config()):
            result.apply(event)
            if isinstance(event, TokenGenerated) and result.first_token_s is None:
                result.first_token_s = time.perf_counter() - started
            if link is not None and link_after is not None and len(result.token_ids) >= link_after.tokens:
                await asyncio.to_thread(link.set_preset, link_after.preset)
                link_after = None
    finally:
        await engine.close()
    if result.finished is None:
        raise EngineError("the engine ended the answer without a Finished event")  # the contract says it cannot
    return result


def report(result: Answer, info: EngineInfo, as_json: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
    if as_json:
        print(json.dumps(result.to_json(info), ensure_ascii=False), file=out, flush=True)
        return
    print(result.text, file=out, flush=True)
    print(stats_line(result, info), file=err, flush=True)


def stats_line(result: Answer, info: EngineInfo) -> str:
    s = result.stats()
    ttft = "n/a" if s["ttft_s"] is None else f"{s['ttft_s']:.2f} s"
    return (
        f"[{mode_name(info)} · draft {info.draft} · {info.target} · {info.device}] {len(result.token_ids)} tokens, "
        f"{s['tokens_per_s']:.1f} tok/s, first token {ttft}, tau {s['tau']:.2f}, "
        f"{s['round_trips_per_100']:.1f} round trips/100 tokens, offline {s['offline_tokens']} "
        f"(kept {s['kept_after_repair']} after repair, {s['kept_after_resync']} re-synced)"
    )


def mode_name(info: EngineInfo) -> str:
    """The mode as the status bar says it: "demo", or "demo stream" when it streams speculatively."""
    return f"{info.mode} stream" if info.stream else info.mode
