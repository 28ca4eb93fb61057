"""The status bar's one line: the figures of the answer, and the draft shape once the engine names it."""

from __future__ import annotations

from dataclasses import replace

from app.chat.live_stats import LiveStats
from app.chat.status_bar import status_content
from app.engine.chat import EngineInfo
from app.engine.events import LinkState, StatsUpdated

INFO = EngineInfo(mode="demo", draft="moa", target="SmolLM2-135M-Instruct", device="cpu", verifier="ws://127.0.0.1")
STATS = StatsUpdated(
    tau=1.84,
    acceptance_rate=0.25,
    acceptance_by_depth=(0.5, 0.2),
    rtt_ms=68.0,
    tokens_per_s=7.8,
    round_trips=30,
    round_trips_per_100=54.6,
    bytes_up_per_token=40.0,
    bytes_down_per_token=1817.0,
    draft_ms=3.0,
    verify_ms=80.0,
    new_tokens=55,
    offline_tokens=0,
)


def line(stats: StatsUpdated | None) -> str:
    live = LiveStats(link=LinkState.ONLINE, rtt_ms=68.0)
    if stats is not None:
        live.apply(stats)
    return status_content(INFO, live, "4g").plain


def test_the_line_names_the_link_and_the_figures_of_the_answer() -> None:
    shown = line(STATS)
    for expected in (
        "demo",
        "moa→SmolLM2-135M-Instruct · cpu",
        "● online 68 ms",
        "[4g]",
        "τ 1.84",
        "acc 25%",
        "7.8 tok/s",
        "55 rt/100",
        "1857 B/tok",
    ):
        assert expected in shown, expected


def test_the_draft_shape_shows_once_the_engine_names_it() -> None:
    assert "tree 4,4,16" in line(replace(STATS, shape="tree 4,4,16"))
    assert " · tree" not in line(STATS) and "τ –" in line(None)


def test_the_mode_says_stream_when_the_engine_streams_speculatively() -> None:
    live = LiveStats(link=LinkState.ONLINE)
    assert status_content(replace(INFO, stream=True), live).plain.startswith("demo stream moa→")
    assert "stream" not in status_content(INFO, live).plain


def test_a_stream_shows_the_share_the_draft_wrote_where_rounds_show_acceptance() -> None:
    streamed = replace(STATS, acceptance_rate=0.0, acceptance_by_depth=(), drafted_share=0.22)
    assert "drafted 22%" in line(streamed) and "acc" not in line(streamed)
    assert "acc 25%" in line(replace(STATS, drafted_share=0.22))  # rounds verified: their acceptance
