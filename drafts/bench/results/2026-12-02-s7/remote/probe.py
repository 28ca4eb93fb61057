"""``moa-bench --remote`` with every request the client engine sends logged, for ``requests.py``.

    python3 drafts/bench/results/2026-12-02-s7/remote/probe.py LOG.json [moa-bench-remote arguments]

Wraps :meth:`app.engine.link.Link.ask` (kind, drafted nodes, tokens accepted, the verifier's own
time, whether it rode on another request's round trip) and marks each speculative generation's
start and end; the benchmark itself runs unchanged (``python -m app.bench``).
"""

from __future__ import annotations

import atexit
import json
import sys
import time
from pathlib import Path
from typing import Any

from app.bench.cli import main
from app.engine import generation, link
from drafts.protocol import Prefill, Verified, Verify

LOG: list[dict[str, Any]] = []
_ask = link.Link.ask
_run = generation.Generation.run


async def ask(self: link.Link, request: Any, on_part: Any = None, pipelined: bool = False) -> Any:
    started = time.perf_counter()
    reply = await _ask(self, request, on_part, pipelined)
    row: dict[str, Any] = {"type": type(request).__name__, "t0": started, "pipelined": pipelined}
    row["dt"] = time.perf_counter() - started
    if isinstance(request, Verify | Prefill):
        row["nodes"] = int(request.tokens.numel())
    if isinstance(reply, Verified):
        row["accepted"] = int(reply.accepted.numel())
        row["server_ms"] = reply.timings.queue_ms + reply.timings.forward_ms
        row["forward_ms"] = reply.timings.forward_ms
    LOG.append(row)
    return reply


async def run(self: generation.Generation) -> Any:
    LOG.append({"type": "GEN", "prompt": len(self.transcript.history), "t0": time.perf_counter()})
    finished = await _run(self)
    LOG.append({"type": "END", "new": len(finished.tokens), "t0": time.perf_counter()})
    return finished


def save(path: Path) -> None:
    path.write_text(json.dumps(LOG))


if __name__ == "__main__":
    link.Link.ask = ask  # type: ignore[method-assign]
    generation.Generation.run = run  # type: ignore[method-assign]
    atexit.register(save, Path(sys.argv[1]))
    raise SystemExit(main(sys.argv[2:]))
