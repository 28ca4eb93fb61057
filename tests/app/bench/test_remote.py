"""The remote benchmark end to end: a tiny target on a real moa-server on 127.0.0.1, one link, one method."""

from __future__ import annotations

from app.bench.remote import RemoteBenchConfig, run_remote_benchmark
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
    api = result["links"]["lan"]["api"]
    assert set(api) >= LINK_KEYS and api["identical_to_ar"] is True
    assert api["round_trips_per_100"] < moa["round_trips_per_100"]  # one Generate streams the whole output
    assert api["target_forwards_per_100"] >= 100  # one forward per token (and the prefill)
    assert "api" not in result["disconnect"]  # it writes nothing offline
    cut = result["disconnect"]["moa"]
    assert {"offline_tokens", "kept_after_repair", "match_prefix_len"} <= set(cut) and cut["identical_to_ar"]
    assert cut["offline_tokens"] >= 6 and cut["match_prefix_len"] == cut["kept_after_repair"]
