"""The server configuration: refused at construction with a message that says how to fix it."""

from __future__ import annotations

from pathlib import Path

import pytest

from drafts.errors import ConfigError
from server_stub.config import ServerConfig


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.org"])
def test_listening_beyond_loopback_without_a_token_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="--token-file"):
        ServerConfig(host=host)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_needs_no_token(host: str) -> None:
    assert ServerConfig(host=host).loopback


def test_beyond_loopback_a_token_needs_tls_or_an_explicit_insecure_flag(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("x" * 32)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("")
    key.write_text("")

    with pytest.raises(ConfigError, match="in clear.*--certfile and --keyfile, or --allow-insecure-token"):
        ServerConfig(host="0.0.0.0", token_file=token)
    assert not ServerConfig(host="0.0.0.0", token_file=token, certfile=cert, keyfile=key).loopback
    assert not ServerConfig(host="0.0.0.0", token_file=token, allow_insecure_token=True).loopback


def test_a_token_on_loopback_needs_no_tls(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("x" * 32)

    assert ServerConfig(token_file=token).loopback


def test_the_default_limits_are_bounded_and_derived_from_the_machine() -> None:
    config = ServerConfig()

    assert config.sessions_per_client < config.max_sessions and config.connections_per_client < config.max_connections
    assert config.hello_timeout < config.idle_timeout
    assert config.queued_bytes == 2 * config.max_frame_bytes
    assert config.queued_bytes <= config.queued_total_bytes() <= max(config.queued_bytes, 4096 * 2**20)


def test_a_queue_smaller_than_one_frame_is_refused() -> None:
    with pytest.raises(ConfigError, match="--max-queued-mb 1 is below one frame"):
        ServerConfig(max_queued_mb=1)


def test_a_certificate_needs_its_key(tmp_path: Path) -> None:
    cert = tmp_path / "cert.pem"
    cert.write_text("")

    with pytest.raises(ConfigError, match="--certfile and --keyfile go together"):
        ServerConfig(certfile=cert)


def test_missing_files_and_bad_numbers_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        ServerConfig(token_file=tmp_path / "nope")
    with pytest.raises(ConfigError, match="--max-tree must be >= 1"):
        ServerConfig(max_tree=0)
    with pytest.raises(ConfigError, match="--kv-memory-mb"):
        ServerConfig(kv_memory_mb=0)
    with pytest.raises(ConfigError, match="--idle-timeout"):
        ServerConfig(idle_timeout=0)


def test_the_protocol_limits_let_a_full_tree_of_q_through() -> None:
    config = ServerConfig(max_tree=300)
    limits = config.limits(vocab=100_000, max_tree_nodes=config.tree_limit("cpu"))

    assert limits.max_tree_nodes == 300 and limits.max_tensor_elements >= 300 * 100_000
    assert ServerConfig(max_frame_bytes=1000).socket_max_bytes > 1000
