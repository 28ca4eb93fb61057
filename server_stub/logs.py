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
