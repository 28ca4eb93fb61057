"""Every result records where it ran, including the settings that change CPU timings."""

from __future__ import annotations

import pytest
import torch

from drafts.bench.environment import cpu_model, run_environment
from tests.tiny_targets import tiny_model, tiny_runner


def test_the_environment_names_target_device_threads_and_omp_wait_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = tiny_runner(tiny_model("llama"))
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    passive = run_environment(runner)
    monkeypatch.delenv("OMP_WAIT_POLICY")
    default = run_environment(runner)

    assert (passive["omp_wait_policy"], default["omp_wait_policy"]) == ("PASSIVE", "default")
    assert passive["torch_threads"] == torch.get_num_threads()
    assert (passive["device"], passive["dtype"]) == ("cpu", "float32")
    assert passive["target"] == runner.fingerprint.to_dict()


def test_the_environment_names_the_cpu_model() -> None:
    env = run_environment(tiny_runner(tiny_model("llama")))

    assert env["cpu"] == cpu_model() and env["cpu"].strip() != ""
