"""The demo's measure: which settings each mode it names runs with."""

from __future__ import annotations

import pytest

from app.demo.measure import settings_for
from drafts.errors import ConfigError


def test_demo_stream_is_the_demo_with_stream_on_starting_on_the_first_preset() -> None:
    streamed = settings_for("demo-stream", ["4g", "3g"], 64, "cpu", "moa")
    assert (streamed.mode, streamed.stream, streamed.link, streamed.max_tokens) == ("demo", True, "4g", 64)
    plain = settings_for("demo", ["4g"], 64, "cpu", "moa")
    assert (plain.mode, plain.stream, plain.link) == ("demo", False, "4g")
    assert settings_for("local", ["4g"], 64, "cpu", "moa").link == "lan"


def test_an_unknown_mode_names_the_modes() -> None:
    with pytest.raises(ConfigError, match="demo, remote, local, api"):
        settings_for("cloud-stream", ["lan"], 64, "cpu", "moa")
