"""moa-server's command line: flags to a config, and refusals that exit 2 with a JSON log line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import IO

import pytest

from drafts.errors import ConfigError
from server_stub.cli import backend_config, build_parser, config_from, main
from server_stub.config import ServerConfig

ROOT = Path(__file__).resolve().parents[2]


def test_flags_become_the_server_config(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("y" * 32)

    args = build_parser().parse_args(
        [
            "--host",
            "0.0.0.0",
            "--port",
            "9000",
            "--token-file",
            str(token),
            "--allow-insecure-token",
            "--max-sessions",
            "3",
            "--max-context",
            "512",
            "--max-tree",
            "16",
            "--kv-memory-mb",
            "64",
            "--resume-grace",
            "5",
            "--max-connections",
            "40",
            "--max-connections-per-client",
            "4",
            "--max-sessions-per-client",
            "2",
            "--hello-timeout",
            "3",
            "--max-queued-mb",
            "200",
            "--max-queued-total-mb",
            "900",
        ]
    )
    config = config_from(args)

    assert (config.max_connections, config.connections_per_client, config.sessions_per_client) == (40, 4, 2)
    assert (config.hello_timeout, config.queued_bytes, config.queued_total_bytes()) == (3, 200 * 2**20, 900 * 2**20)
    assert (config.host, config.port, config.token_file, config.max_sessions) == ("0.0.0.0", 9000, token, 3)
    assert config.kv_memory_bytes == 64 * 2**20 and config.resume_grace == 5
    limits = backend_config(config)
    assert (limits.max_context, limits.max_tree_nodes, limits.kv_memory_bytes) == (512, 16, 64 * 2**20)


def test_speculative_streaming_is_on_unless_no_propose_is_given() -> None:
    assert config_from(build_parser().parse_args([])).propose
    assert not config_from(build_parser().parse_args(["--no-propose"])).propose


def test_vectors_later_are_on_unless_no_later_is_given() -> None:
    assert config_from(build_parser().parse_args([])).later
    assert not config_from(build_parser().parse_args(["--no-later"])).later


def test_the_target_runs_packed_where_it_can_unless_dense_layers_are_asked_for() -> None:
    assert config_from(build_parser().parse_args([])).linear == "auto"
    assert config_from(build_parser().parse_args(["--linear", "dense"])).linear == "dense"
    with pytest.raises(ConfigError, match="--linear must be one of auto, packed, dense"):
        ServerConfig(linear="fast")


def test_an_open_host_without_a_token_exits_2_before_loading_anything(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--host", "0.0.0.0"])

    record = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert code == 2
    assert record["event"] == "server.error" and "--token-file" in record["error"]


def test_the_program_ends_right_after_its_clean_close_without_the_interpreters_teardown(tmp_path: Path) -> None:
    """SIGTERM: the server closes cleanly, then the process ends (exit 0) without running the interpreter's
    teardown, which for a real target is seconds of garbage collection (an atexit hook stands in for it here and
    leaves a mark if it runs). The demo gives its verifier 1 s after SIGTERM before a SIGKILL."""
    teardown_ran = tmp_path / "teardown-ran"
    program = textwrap.dedent(
        f"""
        import atexit, pathlib
        import server_stub.cli as cli
        from tests.server_stub.serving import tiny_backend
        cli.load_backend = lambda config: tiny_backend()
        atexit.register(pathlib.Path({str(teardown_ran)!r}).touch)
        raise SystemExit(cli.main())
        """
    )
    server = subprocess.Popen(
        [sys.executable, "-c", program, "--port", "0"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stderr is not None
        events = [json.loads(line)["event"] for line in _lines_until(server.stderr, "server.start")]
        server.send_signal(signal.SIGTERM)
        _, rest = server.communicate(timeout=60)  # a hang guard, not a measure
    finally:
        server.kill()
    events += [json.loads(line)["event"] for line in rest.splitlines() if line.startswith("{")]

    assert server.returncode == 0  # it ended by itself (a SIGKILL reads -9)
    assert events[-2:] == ["server.signal", "server.stop"]  # closed cleanly first
    assert not teardown_ran.exists()


def _lines_until(stream: IO[str], event: str) -> list[str]:
    lines = []
    for line in stream:
        if line.startswith("{"):
            lines.append(line)
            if json.loads(line)["event"] == event:
                return lines
    raise AssertionError(f"the server ended before {event}: {lines}")
