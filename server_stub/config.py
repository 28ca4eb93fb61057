"""The server's configuration: built once from the command line, validated at construction, then frozen."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from drafts.errors import ConfigError
from drafts.protocol import Limits

MIB = 2**20


@dataclass(frozen=True)
class ServerConfig:
    # what to serve
    target: str | None = None  # alias, .gguf, directory or hub id; None = the bundled SmolLM2
    device: str = "auto"  # cuda, then mps, then cpu
    draft_checkpoint: Path | None = None  # a MoA checkpoint whose LSA + Ekv2E runs here ("memory" vectors)
    # where, and who may connect
    host: str = "127.0.0.1"  # loopback: only this machine; anything else needs a token
    port: int = 8765  # 0 = any free port (tests)
    token_file: Path | None = None  # a shared secret clients send as "Authorization: Bearer <token>"
    certfile: Path | None = None  # TLS certificate (wss://); needs keyfile
    keyfile: Path | None = None
    # limits, each answered with an Error reply while the server keeps serving
    max_sessions: int = 64  # open plus resumable sessions
    max_context: int | None = None  # tokens per session; None = the target's context window
    max_tree: int = 64  # drafted nodes per Verify; big trees cost more than they gain (NOTES.md)
    max_frame_bytes: int = 64 * MIB  # largest frame answered (a 2048-token SmolLM2 prefill with fp16 KV is 47 MB)
    idle_timeout: float = 300.0  # seconds without a request before a connection is closed (resumable)
    kv_memory_mb: int | None = None  # KV cache budget over all sessions; least recently used evicted beyond it
    resume_grace: float = 60.0  # seconds a dropped client's session waits to be resumed
    max_batch: int = 16  # sessions verified in one forward pass

    def __post_init__(self) -> None:
        if (self.certfile is None) != (self.keyfile is None):
            raise ConfigError("--certfile and --keyfile go together: pass both for TLS, or neither")
        if not self.loopback and self.token_file is None:
            raise ConfigError(
                f"--host {self.host} accepts connections from other machines, so a token is required: "
                "pass --token-file F (a file holding a long random secret; clients send it as a bearer token), "
                "or listen on 127.0.0.1"
            )
        for path in (self.token_file, self.certfile, self.keyfile):
            if path is not None and not path.is_file():
                raise ConfigError(f"{path} does not exist or is not a file; check the path")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"--port must be in 0..65535, got {self.port}")
        for name in ("max_sessions", "max_tree", "max_frame_bytes", "max_batch"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        for name in ("max_context", "kv_memory_mb"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {value}; omit it for no limit")
        if self.idle_timeout <= 0 or self.resume_grace < 0:
            raise ConfigError("--idle-timeout must be > 0 and --resume-grace >= 0 (seconds)")

    @property
    def loopback(self) -> bool:
        """Whether only this machine can connect."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:  # a host name other than localhost may resolve to anything
            return False

    @property
    def kv_memory_bytes(self) -> int | None:
        return None if self.kv_memory_mb is None else self.kv_memory_mb * MIB

    def limits(self, vocab: int) -> Limits:
        """What the protocol accepts from a client; q of a full tree over ``vocab`` tokens must fit."""
        return Limits(
            max_frame_bytes=self.max_frame_bytes,
            max_tree_nodes=self.max_tree,
            max_tensor_elements=max(Limits().max_tensor_elements, self.max_tree * vocab),
        )

    @property
    def socket_max_bytes(self) -> int:
        """The websocket's own cap: frames up to it get a TOO_LARGE reply, beyond it the connection closes (1009)."""
        return 2 * self.max_frame_bytes + MIB
