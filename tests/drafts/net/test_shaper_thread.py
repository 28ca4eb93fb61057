"""The shaper on its own thread, driven from synchronous code."""

from __future__ import annotations

import socket

import pytest

from drafts.errors import ConfigError
from drafts.net.link import PRESETS
from drafts.net.shaper_thread import ShaperThread
from tests.drafts.net.echo import ThreadedEchoServer


def recv_until_cut(sock: socket.socket) -> bytes:
    """The blocking twin of tests.drafts.net.test_shaper.read_until_cut."""
    try:
        return sock.recv(1)
    except ConnectionResetError:
        return b""


def test_the_shaper_thread_serves_synchronous_code_and_cuts_it_when_offline() -> None:
    with ThreadedEchoServer() as server, ShaperThread(upstream_port=server.port, profile=PRESETS["wifi"]) as link:
        with socket.create_connection(("127.0.0.1", link.port), timeout=5) as sock:
            sock.sendall(b"sync")
            assert sock.recv(4) == b"sync"

            link.set_profile(PRESETS["offline"])

            sock.settimeout(1.0)  # a cut must show within a second
            assert recv_until_cut(sock) == b""
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", link.port), timeout=5)

        assert link.stats().cut_connections == 1
        assert link.stats().bytes_up == 4


def test_the_shaper_refuses_a_non_loopback_address_unless_allowed_and_listens_where_allowed() -> None:
    with pytest.raises(ConfigError, match="allow_remote"):
        ShaperThread(upstream_port=1, listen_host="0.0.0.0")
    with ShaperThread(upstream_port=1, listen_host="0.0.0.0", allow_remote=True) as link:
        assert link.port > 0
    with ShaperThread(upstream_port=1, listen_host="localhost") as link:
        assert link.port > 0
