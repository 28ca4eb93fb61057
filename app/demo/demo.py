"""The demo: the verifier as its own process on loopback, a link shaper in front, one command.

    demo = Demo.launch(DemoOptions(draft_checkpoint=moa_dir, link="4g"), on_progress=print)
    ...                         # load the client's draft meanwhile: the verifier loads in parallel
    demo.wait_ready()           # the first run converts the bundled GGUF once (slow); later: seconds
    engine connects to demo.url # ws://127.0.0.1:<shaper port>
    demo.link.set_preset("offline")
    demo.stop()                 # also at exit; see app.demo.tether for crashes

The verifier is ``python -m server_stub`` from a source or pip install, or, in a PyInstaller
bundle, the ``moa-server`` executable next to the app's. Its port is fixed at launch, so a
restart after a crash comes back where the shaper points.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.demo.errors import DemoError
from app.demo.link_control import LinkControl
from app.demo.verifier import Progress, VerifierProcess, VerifierState, VerifierStatus, child_env
from drafts.errors import ConfigError
from drafts.locations import REPO_ROOT
from drafts.net.link import preset
from drafts.net.shaper_thread import ShaperThread

HOST = "127.0.0.1"
QUIT_GRACE_S = 1.0  # on quit the demo's own verifier has nothing to save: SIGKILL it after this long (it ends
# by itself ~0.1 s after SIGTERM: moa-server skips the interpreter's teardown, see server_stub.cli)


@dataclass(frozen=True)
class DemoOptions:
    target: str = "smollm2"  # the verifier's target (the client's draft must be trained for it)
    device: str = "auto"  # the verifier's device
    draft_checkpoint: Path | None = None  # a MoA checkpoint: the verifier computes its memory vectors
    link: str = "lan"  # the starting preset ("offline" included)
    ready_timeout_s: float = 900.0  # a first start converts the GGUF; a slow machine takes minutes
    auto_restarts: int = 3  # a crashed verifier is started again this many times (then it stays down)

    def __post_init__(self) -> None:
        preset(self.link)  # a ConfigError naming the choices


def verifier_command(options: DemoOptions, port: int) -> list[str]:
    """The command line of the demo's verifier on ``port``."""
    args = ["--host", HOST, "--port", str(port), "--device", options.device, "--target", options.target]
    if options.draft_checkpoint is not None:
        args += ["--draft-checkpoint", str(options.draft_checkpoint)]
    if getattr(sys, "frozen", False):  # a PyInstaller bundle: the sibling executable
        executable = Path(sys.executable)
        return [str(executable.with_name("moa-server" + executable.suffix)), *args]
    return [sys.executable, "-m", "server_stub", *args]


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class Demo:
    """The verifier process and the link shaper in front of it; see the module docstring."""

    def __init__(
        self, verifier: VerifierProcess, shaper: ShaperThread, on_progress: Progress, options: DemoOptions
    ) -> None:
        self.verifier = verifier
        self._shaper = shaper
        self.link = LinkControl(shaper)
        self._on_progress = on_progress
        self._ready_timeout_s = options.ready_timeout_s
        self._restarts_left = options.auto_restarts
        self._serving = verifier.status.state is VerifierState.READY
        self._launched = time.monotonic()
        verifier.subscribe(self._on_status)

    @classmethod
    def launch(
        cls,
        options: DemoOptions,
        on_progress: Progress | None = None,
        command: Callable[[DemoOptions, int], list[str]] = verifier_command,
    ) -> Demo:
        """Spawn the verifier (``command(options, port)``) and start the shaper; returns at once
        (see :meth:`wait_ready`)."""
        progress = on_progress or (lambda message: None)
        port = free_port()
        verifier = VerifierProcess(command(options, port), port, progress, child_env(str(REPO_ROOT)))
        progress(f"starting the verifier ({options.target}) on {HOST}:{port}")
        verifier.start()
        try:
            shaper = ShaperThread(upstream_host=HOST, upstream_port=port, profile=preset(options.link)).start()
        except (OSError, ConfigError) as exc:
            verifier.close()
            raise DemoError(f"cannot start the demo's link shaper on {HOST}: {exc}") from exc
        return cls(verifier, shaper, progress, options)

    @classmethod
    def start(
        cls,
        options: DemoOptions,
        on_progress: Progress | None = None,
        command: Callable[[DemoOptions, int], list[str]] = verifier_command,
    ) -> Demo:
        """:meth:`launch`, then :meth:`wait_ready`."""
        demo = cls.launch(options, on_progress, command)
        try:
            demo.wait_ready()
        except BaseException:
            demo.stop()
            raise
        return demo

    def wait_ready(self) -> float:
        """Block until the verifier listens; the seconds since launch."""
        self.verifier.wait_ready(self._ready_timeout_s)
        elapsed = time.monotonic() - self._launched
        self._on_progress(f"verifier ready after {elapsed:.1f} s; link {self.link.describe()}")
        return elapsed

    @property
    def url(self) -> str:
        """Where the client connects: the shaper's port."""
        return f"ws://{HOST}:{self._shaper.port}"

    @property
    def status(self) -> VerifierStatus:
        return self.verifier.status

    def restart(self) -> None:
        """Start the verifier again (after a crash) and wait until it listens."""
        self.verifier.restart()
        self.verifier.wait_ready(self._ready_timeout_s)

    def _on_status(self, status: VerifierStatus) -> None:
        """A crash (on the verifier's watching thread): report it, and start the verifier again while allowed.

        Only a verifier that was serving is restarted: one that fails while starting says why (wait_ready).
        """
        if status.state is VerifierState.READY:
            self._serving = True
        if status.state is not VerifierState.CRASHED or not self._serving:
            return
        self._serving = False
        if self._restarts_left <= 0:
            self._on_progress(f"{status.message}; not restarting it again (restart() does)")
            return
        self._restarts_left -= 1
        self._on_progress(f"{status.message}; restarting it")
        threading.Thread(target=self.verifier.restart, name="moa-verifier-restart", daemon=True).start()

    def stop(self) -> None:
        """Stop the shaper and the verifier; safe to call twice."""
        self._restarts_left = 0
        try:
            self._shaper.stop()
        finally:
            self.verifier.close(QUIT_GRACE_S)

    def __enter__(self) -> Demo:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
