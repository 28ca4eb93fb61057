"""Child processes that cannot outlive the app: their own process group, killed on every way out.

- **quit, Ctrl+C, an exception**: :func:`stop_group` from the owner's ``finally``, and an
  :mod:`atexit` hook for any child still registered;
- **the app killed (SIGKILL, a segfault)**: on Linux the kernel sends the child SIGTERM when the
  thread that spawned it ends (``prctl(PR_SET_PDEATHSIG)``). That is the spawning *thread*, so
  :class:`Spawner` spawns from one long-lived thread of its own, never from a short-lived worker.
- the child gets a new session (``start_new_session``): a Ctrl+C typed in the terminal goes to
  the app, which decides; the child's group is what :func:`stop_group` signals.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

PR_SET_PDEATHSIG = 1  # linux/prctl.h
STOP_GRACE_S = 5.0  # SIGTERM first (the server closes its sessions), SIGKILL after this long

_live: set[subprocess.Popen[Any]] = set()
_live_lock = threading.Lock()


def _pdeathsig_hook() -> Callable[[], None] | None:
    """A preexec_fn asking the kernel for SIGTERM when our spawning thread dies (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, in the parent: no dlopen after fork
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def tie_to_parent() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the prctl took effect
            os._exit(1)

    return tie_to_parent


class Spawner:
    """Starts tethered children from one thread that lives until :meth:`close` (see the module docstring)."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="moa-spawner")

    def spawn(self, command: Sequence[str], **popen: Any) -> subprocess.Popen[bytes]:
        return self._thread.submit(_spawn, list(command), popen).result()

    def close(self) -> None:
        self._thread.shutdown(wait=True)


def _spawn(command: list[str], popen: dict[str, Any]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(command, start_new_session=True, preexec_fn=_pdeathsig_hook(), **popen)
    with _live_lock:
        _live.add(proc)
    return proc


def stop_group(proc: subprocess.Popen[Any], grace_s: float = STOP_GRACE_S) -> int | None:
    """SIGTERM the child's process group, SIGKILL it after ``grace_s``; the child's exit code."""
    try:
        if proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(grace_s)
        return proc.returncode
    finally:
        forget(proc)


def forget(proc: subprocess.Popen[Any]) -> None:
    """The child has ended (or was stopped): no need to stop it at exit."""
    with _live_lock:
        _live.discard(proc)


def _signal_group(proc: subprocess.Popen[Any], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # the child leads its own group (start_new_session)


@atexit.register
def _stop_all() -> None:
    with _live_lock:
        left = list(_live)
    for proc in left:
        stop_group(proc, grace_s=2.0)
