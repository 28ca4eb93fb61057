"""The batching measurement runs end to end on a tiny target."""

from __future__ import annotations

from server_stub.backend.throughput import measure
from tests.tiny_drafts import tiny_llama, tiny_target_runner


def test_the_measurement_reports_both_rates_and_their_ratio() -> None:
    result = measure(tiny_target_runner(tiny_llama()), batch=3, prefix=8, gamma=2, rounds=2)

    assert result["batch"] == 3
    assert result["sequential_verifications_per_s"] > 0 and result["batched_verifications_per_s"] > 0
    assert result["gain"] == result["batched_verifications_per_s"] / result["sequential_verifications_per_s"]
