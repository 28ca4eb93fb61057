"""Structured logs: one JSON object per line, the event's fields at the top level."""

from __future__ import annotations

import io
import json
import logging

from server_stub.logs import configure_logging, log_event


def test_events_come_out_as_one_json_object_per_line() -> None:
    stream = io.StringIO()
    configure_logging(logging.INFO, stream)
    log = logging.getLogger("server_stub.test")

    log_event(log, "session.open", session="s1", resumed=False)
    log_event(log, "hidden", logging.DEBUG, session="s2")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("request.failed")

    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["session.open", "request.failed"]
    assert lines[0]["session"] == "s1" and lines[0]["resumed"] is False and lines[0]["level"] == "info"
    assert lines[0]["logger"] == "server_stub.test" and lines[0]["ts"].endswith("Z")
    assert "ValueError: boom" in lines[1]["exception"]
