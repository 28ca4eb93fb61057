"""The machine-derived defaults: a KV budget and a queue cap from the memory actually free."""

from __future__ import annotations

from server_stub import capacity
from server_stub.cli import backend_config
from server_stub.config import ServerConfig


def test_the_kv_budget_defaults_to_half_the_free_memory_of_the_device() -> None:
    free = capacity.system_available_bytes()

    budget = capacity.default_kv_budget_bytes("cpu")

    assert 0 < budget <= free and abs(budget - free * capacity.KV_SHARE) < 0.1 * free  # free memory moves a little


def test_without_a_flag_the_backend_gets_the_derived_budget_and_with_one_the_flag() -> None:
    derived = capacity.default_kv_budget_bytes("cpu")

    assert backend_config(ServerConfig(), derived).kv_memory_bytes == derived
    assert backend_config(ServerConfig(kv_memory_mb=64), derived).kv_memory_bytes == 64 * 2**20


def test_the_queued_bytes_of_all_connections_are_capped_between_a_floor_and_a_ceiling() -> None:
    total = capacity.default_queued_total_bytes()

    assert capacity.QUEUE_FLOOR <= total <= capacity.QUEUE_CEILING
    assert total <= max(capacity.QUEUE_FLOOR, capacity.system_available_bytes())
