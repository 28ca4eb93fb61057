"""Structured logs: one JSON object per line on stderr, through the standard ``logging`` module.

Code logs *events* with fields, ``log_event(log, "session.open", session=sid, resumed=False)``,
and the formatter writes ``{"ts": ..., "level": "info", "logger": ..., "event": "session.open",
"session": ..., "resumed": false}``. Records from other libraries (websockets) come out in the
same shape, their message as the event.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

_FIELDS = "fields"  # the LogRecord attribute that carries an event's fields


def log_event(logger: logging.Logger, event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``event`` with ``fields`` (JSON-serialisable, or turned into strings)."""
    logger.log(level, event, extra={_FIELDS: fields})


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        data.update(getattr(record, _FIELDS, {}))
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def configure_logging(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Send every logger's records to ``stream`` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("websockets").setLevel(max(level, logging.WARNING))  # its per-frame debug is noise


class Throttle:
    """At most ``burst`` log lines per ``window_s`` seconds for one noisy event; the rest are counted.

    A flood of rejected frames must not become a flood of log lines (a cheap way to fill a disk):
    the first ``burst`` of each window are logged, and the next line logged says how many were
    suppressed in between (field ``suppressed``).
    """

    def __init__(self, burst: int = 10, window_s: float = 10.0) -> None:
        self.burst = burst
        self.window_s = window_s
        self._window_start = -float("inf")
        self._logged = 0
        self.suppressed = 0  # since the last line logged
        self.suppressed_total = 0

    def allow(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        if now - self._window_start >= self.window_s:
            self._window_start, self._logged = now, 0
        if self._logged < self.burst:
            self._logged += 1
            return True
        self.suppressed += 1
        self.suppressed_total += 1
        return False

    def log(self, logger: logging.Logger, event: str, level: int = logging.WARNING, **fields: Any) -> None:
        """``log_event`` if this window still allows it, with the count suppressed since the last line."""
        if not self.allow():
            return
        if self.suppressed:
            fields["suppressed"], self.suppressed = self.suppressed, 0
        log_event(logger, event, level, **fields)
