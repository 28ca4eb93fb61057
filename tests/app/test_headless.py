"""The headless answer's report: the mode (stream included) in the stats line and the JSON."""

from __future__ import annotations

import io
import json
from dataclasses import replace

from app.engine.chat import EngineInfo
from app.engine.events import Finished, GenerationStats, TokenGenerated
from app.headless import Answer, report
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopReason

INFO = EngineInfo("demo", "moa", "SmolLM2-135M-Instruct", "cpu", "ws://127.0.0.1:1")


def answered() -> Answer:
    result = Answer()
    result.apply(TokenGenerated(0, 42, TokenSource.DRAFT_ACCEPTED, "Hi"))
    stats = GenerationStats(
        new_tokens=1,
        accepted=1,
        target=0,
        unverified=0,
        offline_tokens=0,
        kept_after_repair=0,
        round_trips=1,
        verify_rounds=1,
        bytes_up=10,
        bytes_down=100,
        wall_s=0.5,
        ttft_s=0.1,
        longest_pause_s=0.1,
        mean_gamma=1.0,
        drafted_ahead=0,
        rtt_ms=None,
    )
    result.apply(Finished((42,), StopReason.EOS, stats, "Hi"))
    return result


def reported(info: EngineInfo, as_json: bool) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    report(answered(), info, as_json, out, err)
    return out.getvalue(), err.getvalue()


def test_the_json_says_whether_the_engine_streams_speculatively() -> None:
    assert json.loads(reported(replace(INFO, stream=True), True)[0])["engine"]["stream"] is True
    assert json.loads(reported(INFO, True)[0])["engine"]["stream"] is False


def test_the_stats_line_names_the_mode_as_the_status_bar_does() -> None:
    text, line = reported(replace(INFO, stream=True), False)
    assert text == "Hi\n" and line.startswith("[demo stream · draft moa")
    assert reported(INFO, False)[1].startswith("[demo · draft moa")
