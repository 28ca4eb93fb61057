"""The server's configuration: built once from the command line, validated at construction, then frozen.

Every limit has a safe default (issue 13: one client must not be able to hurt another, and a
server started with no flags must not exhaust its machine); each refusal names its flag:

    --max-connections 256           connections open at once (a new one beyond it: BUSY, closed)
    --max-connections-per-client 64 of them from one client address
    --hello-timeout 10              seconds a new connection may take to say Hello
    --max-sessions 64               open plus resumable sessions
    --max-sessions-per-client 32    of them for one client address (its oldest detached one makes room)
    --max-queued-mb (2 frames)      request bytes read but not yet answered, per connection
    --max-queued-total-mb (derived) the same over all connections: 1/8 of free memory, 256 MiB..4 GiB
    --max-tree (by device)          drafted nodes per Verify: 64 on a CPU, 128 on an accelerator (tree_limit)
    --kv-memory-mb (derived)        every session's KV: half the target device's free memory

--no-propose turns speculative streaming off (``Capabilities.propose`` false: clients use round-based
speculation; a ``Generate(propose=True)`` is refused with BAD_FRAME, a Propose ignored), e.g. where the
verifier's steps must stay plain ones. --no-later turns "vectors later" off (``Capabilities.later``
false: clients prefill in chunks, each reply with its vectors; ``Prefill(later=True)`` and Fetch are
refused with BAD_FRAME).

A "client" is a peer address: behind a reverse proxy every client shares one, so raise the
per-client limits there. A token off loopback travels in clear without TLS, so it needs
--certfile/--keyfile, or --allow-insecure-token said explicitly (e.g. behind a TLS proxy).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

from drafts.errors import ConfigError
from drafts.protocol import Limits
from drafts.target.device import is_accelerator
from drafts.target.packed_linear import LINEAR_CHOICES
from server_stub.capacity import default_queued_total_bytes

MIB = 2**20
# Drafted nodes one Verify may carry when --max-tree is not given, by where the target runs. On a CPU a
# 61-node verify already costs 3.8 one-token steps (drafts/bench/results/2026-12-02-s7/remote), so bigger
# trees cost more than they gain; on an accelerator a verify of ~100 nodes costs about what one token
# does, and the GPU verifier's default tree (drafts.target.default_shape.VERIFIER_GPU_TREE) must fit.
MAX_TREE_CPU = 64
MAX_TREE_ACCELERATOR = 128


@dataclass(frozen=True)
class ServerConfig:
    # what to serve
    target: str | None = None  # alias, .gguf, directory or hub id; None = the bundled SmolLM2
    device: str = "auto"  # cuda, then mps, then cpu
    draft_checkpoint: Path | None = None  # a MoA checkpoint whose LSA + Ekv2E runs here ("memory" vectors)
    linear: str = "auto"  # the target's Linear layers: auto = packed for oneDNN on a CPU in float32 (~2x faster)
    # where, and who may connect
    host: str = "127.0.0.1"  # loopback: only this machine; anything else needs a token (and TLS)
    port: int = 8765  # 0 = any free port (tests)
    token_file: Path | None = None  # a shared secret clients send as "Authorization: Bearer <token>"
    certfile: Path | None = None  # TLS certificate (wss://); needs keyfile
    keyfile: Path | None = None
    allow_insecure_token: bool = False  # accept a token off loopback without TLS (a TLS proxy in front)
    # limits, each answered with an Error reply while the server keeps serving
    max_sessions: int = 64  # open plus resumable sessions
    max_sessions_per_client: int | None = None  # per peer address; None = half of max_sessions
    max_connections: int = 256  # open at once; beyond, a new connection gets BUSY and is closed
    max_connections_per_client: int | None = None  # per peer address; None = a quarter of max_connections
    hello_timeout: float = 10.0  # seconds a new connection has to send Hello
    max_queued_mb: int | None = None  # request bytes queued per connection; None = 2 x max_frame_bytes
    max_queued_total_mb: int | None = None  # over all connections; None = derived from free memory (capacity.py)
    max_context: int | None = None  # tokens per session; None = the target's context window
    max_tree: int | None = None  # drafted nodes per Verify; None = by the target's device (tree_limit)
    max_frame_bytes: int = 64 * MIB  # largest frame answered (a 2048-token SmolLM2 prefill with fp16 KV is 47 MB)
    idle_timeout: float = 300.0  # seconds without a request before a connection is closed (resumable)
    kv_memory_mb: int | None = None  # KV budget over all sessions (LRU evicted beyond); None = from free memory
    resume_grace: float = 60.0  # seconds a dropped client's session waits to be resumed
    max_batch: int = 16  # sessions verified in one forward pass
    # what it serves beyond the round-based protocol
    propose: bool = True  # speculative streaming (Capabilities.propose); off: Generate(propose=True) is refused
    later: bool = True  # vectors later (Capabilities.later); off: Prefill(later=True) and Fetch are refused

    def __post_init__(self) -> None:
        if (self.certfile is None) != (self.keyfile is None):
            raise ConfigError("--certfile and --keyfile go together: pass both for TLS, or neither")
        if not self.loopback and self.token_file is None:
            raise ConfigError(
                f"--host {self.host} accepts connections from other machines, so a token is required: "
                "pass --token-file F (a file holding a long random secret; clients send it as a bearer token), "
                "or listen on 127.0.0.1"
            )
        if not self.loopback and self.certfile is None and not self.allow_insecure_token:
            raise ConfigError(
                f"--host {self.host} with a token but no TLS would send the token in clear over the network: "
                "pass --certfile and --keyfile, or --allow-insecure-token if a TLS proxy terminates in front"
            )
        for path in (self.token_file, self.certfile, self.keyfile):
            if path is not None and not path.is_file():
                raise ConfigError(f"{path} does not exist or is not a file; check the path")
        if self.linear not in LINEAR_CHOICES:
            raise ConfigError(f"--linear must be one of {', '.join(LINEAR_CHOICES)}, got {self.linear!r}")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"--port must be in 0..65535, got {self.port}")
        for name in ("max_sessions", "max_frame_bytes", "max_batch", "max_connections"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        for name in (
            "max_context",
            "max_tree",
            "kv_memory_mb",
            "max_sessions_per_client",
            "max_connections_per_client",
            "max_queued_mb",
            "max_queued_total_mb",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {value}; omit it for the default")
        if self.idle_timeout <= 0 or self.resume_grace < 0 or self.hello_timeout <= 0:
            raise ConfigError("--idle-timeout and --hello-timeout must be > 0 and --resume-grace >= 0 (seconds)")
        if self.max_queued_mb is not None and self.max_queued_mb * MIB < self.max_frame_bytes:
            raise ConfigError(
                f"--max-queued-mb {self.max_queued_mb} is below one frame (--max-frame-bytes {self.max_frame_bytes}); "
                "raise it, or lower --max-frame-bytes"
            )

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

    @property
    def sessions_per_client(self) -> int:
        return self.max_sessions_per_client or max(1, self.max_sessions // 2)

    @property
    def connections_per_client(self) -> int:
        return self.max_connections_per_client or max(1, self.max_connections // 4)

    @property
    def queued_bytes(self) -> int:
        """Request bytes one connection may have read and not yet had answered."""
        return self.max_queued_mb * MIB if self.max_queued_mb else 2 * self.max_frame_bytes

    def queued_total_bytes(self) -> int:
        """The same over all connections (reads the machine's free memory unless set)."""
        if self.max_queued_total_mb is not None:
            return self.max_queued_total_mb * MIB
        return max(self.queued_bytes, default_queued_total_bytes())

    def tree_limit(self, device_kind: str | None) -> int:
        """Drafted nodes per Verify for a target on ``device_kind`` (None, unsaid: a CPU): --max-tree, or by device."""
        if self.max_tree is not None:
            return self.max_tree
        return MAX_TREE_ACCELERATOR if is_accelerator(device_kind) else MAX_TREE_CPU

    def limits(self, vocab: int, max_tree_nodes: int) -> Limits:
        """What the protocol accepts from a client; q of a full tree over ``vocab`` tokens must fit."""
        return Limits(
            max_frame_bytes=self.max_frame_bytes,
            max_tree_nodes=max_tree_nodes,
            max_tensor_elements=max(Limits().max_tensor_elements, max_tree_nodes * vocab),
        )

    @property
    def socket_max_bytes(self) -> int:
        """The websocket's own cap: frames up to it get a TOO_LARGE reply, beyond it the connection closes (1009)."""
        return 2 * self.max_frame_bytes + MIB
