"""The demo's verifier: moa-server as a child process on loopback, watched from start to end.

    verifier = VerifierProcess(command, port, on_progress=print)
    verifier.start()               # spawn; returns at once
    verifier.wait_ready()          # until it listens (the first run converts the GGUF: slow)
    verifier.subscribe(on_status)  # READY, CRASHED (exit code, its last error), STOPPED
    verifier.restart()             # after a crash: the same port, so the link shaper needs no change
    verifier.stop()

The server logs one JSON object per line on stderr (:mod:`server_stub.logs`); a reader thread
keeps the last lines, notices ``server.start`` (listening) and ``server.error`` (why it gave up),
and, when the process ends without :meth:`stop`, reports the crash. Callbacks run on that thread.
"""

from __future__ import annotations

import collections
import enum
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.demo.errors import DemoError
from app.demo.tether import STOP_GRACE_S, Spawner, forget, stop_group

Progress = Callable[[str], None]
LOG_LINES = 40  # kept for a crash report
PROGRESS_EVERY_S = 5.0


class VerifierState(enum.Enum):
    STARTING = "starting"
    READY = "ready"
    CRASHED = "crashed"  # ended without being asked to: restart() it
    STOPPED = "stopped"


@dataclass(frozen=True)
class VerifierStatus:
    state: VerifierState
    port: int
    message: str = ""  # for CRASHED: the exit code and the server's last error
    exit_code: int | None = None


class VerifierProcess:
    """See the module docstring."""

    def __init__(
        self, command: Sequence[str], port: int, on_progress: Progress | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.command = list(command)
        self.port = port
        self._on_progress = on_progress or (lambda message: None)
        self._env = env
        self._spawner = Spawner()
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping = False
        self._status = VerifierStatus(VerifierState.STOPPED, port)
        self._callbacks: list[Callable[[VerifierStatus], None]] = []
        self._lines: collections.deque[str] = collections.deque(maxlen=LOG_LINES)
        self._error = ""  # the server's own server.error text, if it gave one
        self.ready_s: float | None = None  # how long the last start took to listen
        self._started = time.monotonic()

    # -- control ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Spawn the server; returns at once (see :meth:`wait_ready`)."""
        if self.running:
            return
        self._ready.clear()
        self._stopping = False
        self._error = ""
        self._lines.clear()
        self._started = time.monotonic()
        self._set(VerifierStatus(VerifierState.STARTING, self.port))
        try:
            self._proc = self._spawner.spawn(
                self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self._env
            )
        except OSError as exc:
            self._set(VerifierStatus(VerifierState.CRASHED, self.port, f"could not start {self.command[0]}: {exc}"))
            raise DemoError(
                f"cannot start the demo's verifier ({' '.join(self.command[:3])} ...): {exc}; "
                "reinstall moa-chat (the moa-server program must sit next to it)"
            ) from exc
        self._reader = threading.Thread(target=self._watch, args=(self._proc,), name="moa-verifier-log", daemon=True)
        self._reader.start()

    def wait_ready(self, timeout_s: float = 900.0) -> float:
        """Block until the server listens; the seconds its start took. Raises DemoError if it ends first."""
        deadline = time.monotonic() + timeout_s
        last_note = time.monotonic()
        while not self._ready.wait(0.2):
            now = time.monotonic()
            if self._proc is None or (self._proc.poll() is not None and not self._ready.is_set()):
                if self._reader is not None:
                    self._reader.join(2.0)  # the last lines, the error among them
                raise DemoError(self._failure("the demo's verifier stopped while starting"))
            if now > deadline:
                self.stop()
                raise DemoError(
                    f"the demo's verifier did not start within {timeout_s:.0f} s; its last lines:\n"
                    + "\n".join(self._lines)
                )
            if now - last_note >= PROGRESS_EVERY_S:
                last_note = now
                self._on_progress(
                    f"loading the target in the verifier: {now - self._started:.0f} s "
                    "(the first start converts the model once; later starts take seconds)"
                )
        assert self.ready_s is not None
        return self.ready_s

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``grace_s``) and wait for it; safe to call twice."""
        self._stopping = True
        if self._proc is not None:
            stop_group(self._proc, grace_s)
        if self._reader is not None:
            self._reader.join(5.0)
        self._set(VerifierStatus(VerifierState.STOPPED, self.port, exit_code=self._exit_code()))

    def restart(self) -> None:
        """Stop (if running) and start again on the same port; returns at once, like :meth:`start`."""
        self.stop()
        self.start()

    def close(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop, and end the spawner thread."""
        self.stop(grace_s)
        self._spawner.close()

    # -- state -----------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def status(self) -> VerifierStatus:
        return self._status

    def subscribe(self, callback: Callable[[VerifierStatus], None]) -> None:
        """``callback(status)`` at every change, on the watching thread (post it to your own loop)."""
        self._callbacks.append(callback)

    def log_tail(self) -> list[str]:
        return list(self._lines)

    # -- the watching thread ---------------------------------------------------------------------
    def _watch(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            self._read_line(raw.decode("utf-8", "replace").rstrip())
        code = proc.wait()
        forget(proc)
        if self._stopping or proc is not self._proc:
            return
        self._set(VerifierStatus(VerifierState.CRASHED, self.port, self._failure("the demo's verifier stopped"), code))

    def _read_line(self, line: str) -> None:
        if not line:
            return
        self._lines.append(line)
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return
        if not isinstance(record, dict):
            return
        event = record.get("event")
        if event == "server.start":
            self.ready_s = time.monotonic() - self._started
            self._ready.set()
            self._set(VerifierStatus(VerifierState.READY, self.port))
        elif event == "server.error":
            self._error = str(record.get("error", ""))

    def _failure(self, what: str) -> str:
        code = self._exit_code()
        why = self._error or (self._lines[-1] if self._lines else "no output")
        return f"{what} (exit code {code}): {why}"

    def _exit_code(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def _set(self, status: VerifierStatus) -> None:
        self._status = status
        for callback in list(self._callbacks):
            callback(status)


def child_env(extra_path: str) -> dict[str, str]:
    """This process's environment, with ``extra_path`` first on PYTHONPATH (a source checkout)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, env.get("PYTHONPATH", "")) if p)
    return env
