"""The remote benchmark end to end: a tiny target on a real moa-server on 127.0.0.1, one link, one method."""

from __future__ import annotations

import pytest

from app.bench.chats import BenchChat
from app.bench.methods import (
    draft_kind,
    engine_config,
    is_stream,
    stream_lag,
    stream_lead,
    stream_width,
    with_stream_options,
)
from app.bench.remote import RemoteBenchConfig, run_remote_benchmark
from drafts.data.conversations import Turn
from drafts.errors import ConfigError
from drafts.sampling import SamplingConfig
from drafts.target.chat import format_chat
from tests.app.engine.chat_scenario import CLIENT, SERVER, TOKENIZER, chat_draft
from tests.app.engine.scenario import CLIENT_RUNNER, PROMPT, SERVER_RUNNER, client_draft, moa_compressor
from tests.app.engine.servers import ServerThread

LINK_KEYS = {
    "tokens_per_s",
    "ttft_s",
    "target_forwards_per_100",
    "round_trips_per_100",
    "bytes_up_per_token",
    "bytes_down_per_token",
    "identical_to_ar",
}


def test_the_remote_benchmark_reports_every_figure_and_a_greedy_output_identical_to_ar() -> None:
    config = RemoteBenchConfig(links=("lan",), methods=("moa", "api"), max_new_tokens=20, cut_after=4, cut_tokens=6)
    with ServerThread(SERVER_RUNNER, moa_compressor()) as server:
        result = run_remote_benchmark(server.port, {"moa": client_draft("moa")}, CLIENT_RUNNER, [PROMPT], config)

    assert set(result) == {"links", "disconnect"} and set(result["links"]) == {"lan"}
    moa = result["links"]["lan"]["moa"]
    assert set(moa) >= LINK_KEYS and moa["identical_to_ar"] is True
    assert moa["tokens_per_s"] > 0 and moa["bytes_up_per_token"] > 0 and moa["round_trips_per_100"] > 0
    # a round trip per verify round, the first riding with the prompt's one Prefill(later); then one more for the
    # prompt's vectors (Fetch pieces, pipelined), which the first drafted round waits for: nothing else
    assert moa["tau"] >= 1 and moa["requests_per_100"] > moa["round_trips_per_100"]
    fetch_per_100 = 100 / moa["new_tokens"]  # one prompt
    assert moa["round_trips_per_100"] == pytest.approx(moa["verify_rounds_per_100"] + fetch_per_100)
    api = result["links"]["lan"]["api"]
    assert set(api) >= LINK_KEYS and api["identical_to_ar"] is True
    assert api["round_trips_per_100"] < moa["round_trips_per_100"]  # one Generate streams the whole output
    assert api["target_forwards_per_100"] >= 100  # one forward per token (and the prefill)
    assert "api" not in result["disconnect"]  # it writes nothing offline
    cut = result["disconnect"]["moa"]
    assert {"offline_tokens", "kept_after_repair", "match_prefix_len"} <= set(cut) and cut["identical_to_ar"]
    assert cut["offline_tokens"] >= 6 and cut["match_prefix_len"] == cut["kept_after_repair"]


def test_chats_played_turn_by_turn_send_only_each_turns_new_tokens() -> None:
    users = ("hello", "tell more", "why not")
    chat = BenchChat("c1", None, tuple(Turn("user", u) for u in users))
    config = RemoteBenchConfig(links=("lan",), methods=("moa", "api"), max_new_tokens=8, cut_tokens=0, turns=3)
    first = format_chat(TOKENIZER, [chat.users[0]])
    with ServerThread(SERVER) as server:
        result = run_remote_benchmark(server.port, {"moa": chat_draft("moa")}, CLIENT, [first], config, chats=[chat])

    for method in ("moa", "api"):
        row = result["links"]["lan"][method]
        assert row["identical_to_ar"] is True
        sent = [t["prefill_tokens_sent"] for t in row["turns"]]
        assert [t["turn"] for t in row["turns"]] == [1, 2, 3]
        # "[u]hello|[a]" but its last token; then the last answer's last token + "|[u]...|[a]"
        assert sent == [len(users[0]) + 6, len(users[1]) + 8, len(users[2]) + 8]
        assert all(t["bytes_down_before_first_token"] > 0 and t["ttft_s"] > 0 for t in row["turns"])


def test_at_a_temperature_it_reports_acceptance_and_link_losses_with_and_without_q() -> None:
    config = RemoteBenchConfig(
        links=("lan",),
        methods=("moa", "moa:noq"),
        max_new_tokens=16,
        cut_tokens=0,
        sampling=SamplingConfig(temperature=1.0, seed=0),
    )
    drafts = {"moa": client_draft("moa"), "moa:noq": client_draft("moa")}
    with ServerThread(SERVER_RUNNER, moa_compressor()) as server:
        result = run_remote_benchmark(server.port, drafts, CLIENT_RUNNER, [PROMPT], config)

    for method in ("moa", "moa:noq"):
        row = result["links"]["lan"][method]
        assert row["identical_to_ar"] is None and row["new_tokens"] == 16 and row["link_losses"] == 0
        assert 0.0 <= row["acceptance_rate"] <= 1.0


def test_a_stream_method_takes_its_proposals_width_after_an_at_sign_and_no_other_method_does() -> None:
    config = RemoteBenchConfig(links=("lan",), methods=("moa-stream@1", "moa-stream+2@8", "api"))
    assert config.draft_methods == ("moa-stream@1", "moa-stream+2@8")
    assert draft_kind("moa-stream+2@8") == "moa" and is_stream("moa-stream@1")
    assert (
        stream_width("moa-stream+2@8") == 8
        and stream_lead("moa-stream+2@8") == 2
        and stream_width("moa-stream") is None
    )
    engine = with_stream_options(engine_config(1, stream=True), "moa-stream+2@8")
    assert engine.stream_lead == 2 and engine.stream_width == 8
    for wrong in ("moa@2", "moa-stream@x", "moa-stream@0", "moa-stream@17"):
        with pytest.raises(ConfigError, match="only a stream method takes a width"):
            RemoteBenchConfig(links=("lan",), methods=(wrong,))


def test_a_stream_method_takes_its_proposals_lag_after_a_tilde_between_lead_and_width() -> None:
    config = RemoteBenchConfig(links=("lan",), methods=("moa-stream~1@1", "moa-stream+2~2@8", "moa-stream~0"))
    assert config.draft_methods == ("moa-stream~1@1", "moa-stream+2~2@8", "moa-stream~0")
    assert draft_kind("moa-stream+2~2@8") == "moa" and is_stream("moa-stream~1@1")
    full = "moa-stream+2~2@8"
    assert (stream_lag(full), stream_lead(full), stream_width(full)) == (2, 2, 8)
    assert stream_lag("moa-stream@4") is None and stream_lag("moa-stream~0") == 0
    engine = with_stream_options(engine_config(1, stream=True), "moa-stream+2~2@8")
    assert (engine.stream_lead, engine.stream_lag, engine.stream_width) == (2, 2, 8)
    for wrong in ("moa~2", "moa-stream~x", "moa-stream~4"):
        with pytest.raises(ConfigError, match="only a stream method takes a lag"):
            RemoteBenchConfig(links=("lan",), methods=(wrong,))


def test_a_stream_method_takes_its_proposals_lead_after_a_plus_and_no_other_method_does() -> None:
    config = RemoteBenchConfig(links=("lan",), methods=("moa-stream+0", "moa-stream", "api"))
    assert config.draft_methods == ("moa-stream+0", "moa-stream")
    assert draft_kind("moa-stream+0") == "moa" and is_stream("moa-stream+0")
    assert stream_lead("moa-stream+3") == 3 and stream_lead("moa-stream") is None
    for wrong in ("moa+2", "moa-stream+x"):
        with pytest.raises(ConfigError, match="only a stream method takes a lead"):
            RemoteBenchConfig(links=("lan",), methods=(wrong,))
