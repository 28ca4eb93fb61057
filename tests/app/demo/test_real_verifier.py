"""The demo with the real moa-server (SmolLM2 and the shipped MoA draft's server half) on loopback."""

from __future__ import annotations

import os

import pytest

from app.demo import Demo, DemoOptions, VerifierState
from drafts.locations import shipped_checkpoint

pytestmark = pytest.mark.integration


def test_the_real_verifier_starts_behind_the_shaper_and_stops_without_a_trace() -> None:
    moa = shipped_checkpoint("SmolLM2-135M-Instruct", "moa")
    messages: list[str] = []
    with Demo.start(DemoOptions(draft_checkpoint=moa, device="cpu", link="wifi"), messages.append) as demo:
        assert demo.status.state is VerifierState.READY
        assert any('"memory_draft": "moa-' in line for line in demo.verifier.log_tail())  # MoA memory is served
        assert demo.link.preset == "wifi"
        pid = demo.verifier.pid
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # It ended by itself on SIGTERM, within the quit grace: a SIGKILL after the grace reads -9.
    assert demo.status.state is VerifierState.STOPPED and demo.status.exit_code == 0
    assert messages[0].startswith("starting the verifier") and "ready after" in messages[-1]
