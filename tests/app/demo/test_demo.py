"""The demo's verifier process and link shaper, with a real child process (an echo server on loopback)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from app.demo import Demo, DemoError, DemoOptions, VerifierState, VerifierStatus
from drafts.errors import ConfigError
from drafts.locations import REPO_ROOT

ECHO = Path(__file__).with_name("echo_server.py")


def echo_command(*extra: str):
    def command(options: DemoOptions, port: int) -> list[str]:
        return [sys.executable, str(ECHO), "--port", str(port), *extra]

    return command


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped by a container's init, does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def wait_until(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def round_trip(url: str, payload: bytes = b"ping") -> bytes:
    host, port = url.removeprefix("ws://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(payload)
        return sock.recv(len(payload))


@pytest.fixture
def demo():
    messages: list[str] = []
    started = Demo.start(DemoOptions(), messages.append, echo_command())
    started.messages = messages  # type: ignore[attr-defined]
    yield started
    started.stop()


def test_the_demo_starts_the_verifier_and_shapes_the_link_in_front(demo: Demo) -> None:
    assert demo.status.state is VerifierState.READY
    assert demo.verifier.ready_s is not None and demo.verifier.ready_s > 0
    assert round_trip(demo.url) == b"ping"
    assert demo.url != f"ws://127.0.0.1:{demo.verifier.port}"  # the client goes through the shaper
    assert any("ready" in m for m in demo.messages)  # type: ignore[attr-defined]


def test_stopping_leaves_no_process(demo: Demo) -> None:
    pid = demo.verifier.pid
    assert pid is not None and alive(pid)
    demo.stop()
    assert not alive(pid)
    assert demo.status.state is VerifierState.STOPPED
    demo.stop()  # twice is fine


def test_the_link_switches_by_preset_name(demo: Demo) -> None:
    seen: list[str] = []
    demo.link.subscribe(seen.append)
    assert demo.link.preset == "lan" and "offline" in demo.link.presets
    demo.link.set_preset("offline")
    with pytest.raises(OSError):
        round_trip(demo.url)
    demo.link.set_preset("4g")
    started = time.monotonic()
    assert round_trip(demo.url) == b"ping"
    assert time.monotonic() - started >= 0.1  # connect and one exchange over a 60 ms RTT
    assert seen == ["offline", "4g"]
    with pytest.raises(ConfigError, match="lan, wifi"):
        demo.link.set_preset("56k")


def test_a_crash_is_reported_and_a_restart_brings_it_back_on_the_same_port() -> None:
    with Demo.start(DemoOptions(auto_restarts=0), None, echo_command()) as demo:
        check_crash_and_restart(demo)


def check_crash_and_restart(demo: Demo) -> None:
    statuses: list[VerifierStatus] = []
    crashed = threading.Event()
    demo.verifier.subscribe(statuses.append)
    demo.verifier.subscribe(lambda s: crashed.set() if s.state is VerifierState.CRASHED else None)
    port, pid = demo.verifier.port, demo.verifier.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert crashed.wait(10)
    crash = statuses[-1]
    assert crash.exit_code == -signal.SIGKILL and "exit code -9" in crash.message

    demo.restart()
    assert demo.status.state is VerifierState.READY and demo.verifier.port == port
    assert demo.verifier.pid != pid
    assert round_trip(demo.url) == b"ping"


def test_a_crashed_verifier_is_restarted_by_itself_a_few_times() -> None:
    messages: list[str] = []
    with Demo.start(DemoOptions(auto_restarts=1), messages.append, echo_command()) as demo:
        first = demo.verifier.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: demo.verifier.pid != first and demo.status.state is VerifierState.READY)
        assert round_trip(demo.url) == b"ping"
        second = demo.verifier.pid
        assert second is not None
        os.kill(second, signal.SIGKILL)
        assert wait_until(lambda: demo.status.state is VerifierState.CRASHED)
        time.sleep(0.5)
        assert demo.status.state is VerifierState.CRASHED  # the allowance is spent: it stays down
    assert any("restarting it" in m for m in messages) and any("not restarting it again" in m for m in messages)


def test_a_verifier_that_gives_up_says_why() -> None:
    with pytest.raises(DemoError, match="stopped while starting .*exit code 2.*no GPU here, use --device cpu"):
        Demo.start(DemoOptions(), None, echo_command("--fail", "no GPU here, use --device cpu"))


def test_progress_is_reported_while_the_verifier_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.demo.verifier.PROGRESS_EVERY_S", 0.3)
    messages: list[str] = []
    with Demo.start(DemoOptions(), messages.append, echo_command("--delay", "1.2")) as demo:
        assert demo.verifier.ready_s is not None and demo.verifier.ready_s >= 1.2
    assert any("loading the target" in m for m in messages)


def test_a_bad_starting_link_is_refused_before_anything_starts() -> None:
    with pytest.raises(ConfigError, match="unknown link profile"):
        DemoOptions(link="56k")


PARENT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from app.demo import Demo, DemoOptions
    cmd = lambda options, port: [sys.executable, sys.argv[2], "--port", str(port)]
    demo = Demo.start(DemoOptions(), None, cmd)
    print(demo.verifier.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_killing_the_app_with_sigkill_takes_the_verifier_down_too() -> None:
    app = subprocess.Popen([sys.executable, "-c", PARENT, str(REPO_ROOT), str(ECHO)], stdout=subprocess.PIPE, text=True)
    assert app.stdout is not None
    try:
        child = int(app.stdout.readline())
        assert alive(child)
    finally:
        app.kill()
        app.wait(10)
    assert wait_until(lambda: not alive(child)), "the verifier outlived the app"


def test_an_app_that_exits_without_stopping_the_demo_stops_it_at_exit() -> None:
    script = PARENT.replace("time.sleep(600)", "")  # ends without demo.stop(): atexit does it
    app = subprocess.run(
        [sys.executable, "-c", script, str(REPO_ROOT), str(ECHO)], capture_output=True, text=True, timeout=60
    )
    child = int(app.stdout.split()[0])
    assert wait_until(lambda: not alive(child), 3.0)
