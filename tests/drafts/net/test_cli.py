"""``python -m drafts.net``: switching the link from stdin, and its input errors."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from drafts.errors import ConfigError
from drafts.net import cli

UNUSED_UPSTREAM = "127.0.0.1:9"  # never dialled: no client connects in these tests


def test_addresses_parse_as_host_and_port() -> None:
    assert cli.parse_address("127.0.0.1:9000", "--listen") == ("127.0.0.1", 9000)
    assert cli.parse_address("[::1]:0", "--listen") == ("::1", 0)


@pytest.mark.parametrize("text", ["9000", "127.0.0.1", "127.0.0.1:http", ":9000", "127.0.0.1:70000"])
def test_a_malformed_address_says_what_is_expected(text: str) -> None:
    with pytest.raises(ConfigError, match="--upstream takes HOST:PORT"):
        cli.parse_address(text, "--upstream")


def test_profile_names_from_stdin_switch_the_link_and_print_the_counters(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("wifi\ndialup\n\noffline\n3g\n"))

    code = cli.main(["--listen", "127.0.0.1:0", "--upstream", UNUSED_UPSTREAM, "--profile", "4g"])

    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert code == 0
    assert lines[0].startswith("shaping 127.0.0.1:")
    assert lines[0].endswith("-> 127.0.0.1:9 as 4g (60 ms RTT, ±10 ms uniform jitter, 10 Mbit/s)")
    assert lines[1] == "4g -> wifi (10 ms RTT, unlimited bandwidth)"
    assert lines[2] == "up 0 B, down 0 B, connections 0 (open 0, cut 0)"
    assert "wifi -> offline (offline)" in lines
    assert "offline -> 3g (150 ms RTT, 1 Mbit/s, 2% retransmitted)" in lines
    assert sum(line.startswith("up ") for line in lines) == 4  # after each switch and the empty line
    assert lines[-1] == "stopped"
    assert "unknown link profile 'dialup'" in err


def test_an_unknown_starting_profile_is_an_error_before_listening(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["--listen", "127.0.0.1:0", "--upstream", UNUSED_UPSTREAM, "--profile", "dialup"])

    assert code == 2
    assert "choose one of: lan, wifi, 5g, 4g, 3g, offline" in capsys.readouterr().err


def test_the_module_runs_and_quits_on_request() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "drafts.net", "--listen", "127.0.0.1:0", "--upstream", UNUSED_UPSTREAM],
        input="5g\nquit\nlan\n",
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert done.returncode == 0, done.stderr
    assert "lan -> 5g (25 ms RTT, 50 Mbit/s)" in done.stdout
    assert "5g -> lan" not in done.stdout  # nothing after quit


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "[::]:0", "192.168.1.5:0", "example.org:0"])
def test_a_non_loopback_listen_address_is_refused_unless_allowed_explicitly(
    listen: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["--listen", listen, "--upstream", UNUSED_UPSTREAM])

    assert code == 2 and "--allow-remote" in capsys.readouterr().err
