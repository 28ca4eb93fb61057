"""The server under soak: a ``moa-server`` subprocess (or this process, in tests), and what it holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Probe:
    """Reads a server process's memory, open files and log."""

    pid: int
    log_path: Path | None = None  # the server's JSON-lines log (None: not captured)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def alive(self) -> bool:
        return Path(f"/proc/{self.pid}").exists()

    def log_lines(self) -> list[dict[str, Any]]:
        if self.log_path is None or not self.log_path.exists():
            return []
        lines = []
        for raw in self.log_path.read_text(errors="replace").splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                lines.append({"event": "unparsed", "text": raw[:200]})
        return lines

    def log_figures(self) -> dict[str, Any]:
        lines = self.log_lines()
        return {
            "log_lines": len(lines),
            "log_bytes": self.log_path.stat().st_size if self.log_path and self.log_path.exists() else 0,
            "tracebacks": sum("exception" in line or "Traceback" in str(line.get("text", "")) for line in lines),
            "errors_logged": sum(line.get("level") == "error" for line in lines),
            "unparsed_lines": sum(line.get("event") == "unparsed" for line in lines),
        }


class ServerProcess:
    """``python -m server_stub ...`` on a free loopback port; its log in ``log_path``."""

    def __init__(self, args: list[str], log_path: Path, cpu: int | None = None) -> None:
        self.log_path = log_path
        command = [sys.executable, "-m", "server_stub", "--port", "0", *args]
        if cpu is not None:
            command = ["taskset", "-c", str(cpu), *command]
        self._log = log_path.open("w")
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        self.process = subprocess.Popen(command, stderr=self._log, stdout=subprocess.DEVNULL, env=env)
        self.probe = Probe(self.process.pid, log_path)

    def url(self, timeout_s: float = 300.0) -> str:
        """The server's URL, once it logs ``server.start``."""
        stop_at = time.monotonic() + timeout_s
        while time.monotonic() < stop_at:
            if self.process.poll() is not None:
                raise RuntimeError(f"moa-server exited with {self.process.returncode}; see {self.log_path}")
            for line in self.probe.log_lines():
                if line.get("event") == "server.start":
                    return str(line["url"])
            time.sleep(0.5)
        raise TimeoutError(f"moa-server did not start within {timeout_s:g} s; see {self.log_path}")

    def stop(self) -> int | None:
        self.process.terminate()
        try:
            code = self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self._log.close()
        return code
