"""``moa-server``: load the target (and the MoA server part), then serve until SIGINT/SIGTERM.

On a signal the server closes cleanly (connections closed, sessions forgotten, the worker
stopped, the logs flushed) and the program then ends at once (:mod:`drafts.program_exit`): the
interpreter's own teardown of the target's heap, a full garbage collection over millions of
torch and transformers objects, took 10.7 s on a loaded core, so ``moa-chat --demo`` (which
gives its verifier 1 s after SIGTERM) had to SIGKILL it on every quit.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from pathlib import Path

from drafts.errors import MoaError
from drafts.program_exit import leave
from drafts.target.device import DEVICE_CHOICES, default_dtype, resolve_device
from drafts.target.loading import load_target
from drafts.target.packed_linear import LINEAR_CHOICES
from drafts.target.runner import TargetRunner
from server_stub.backend.draft_memory import MemoryCompressor
from server_stub.backend.transformers_backend import TransformersBackend, TransformersBackendConfig
from server_stub.capacity import default_kv_budget_bytes
from server_stub.config import ServerConfig
from server_stub.logs import configure_logging, log_event
from server_stub.server import VerifierServer

log = logging.getLogger("server_stub")


def build_parser() -> argparse.ArgumentParser:
    d = ServerConfig()
    p = argparse.ArgumentParser(
        prog="moa-server",
        description="The moa-chat verifier: runs the target model, verifies the drafts clients send over WebSockets.",
    )
    p.add_argument("--target", default=None, help="alias (smollm2, gemma3-270m), .gguf, directory or hub id")
    p.add_argument("--device", default=d.device, choices=DEVICE_CHOICES)
    p.add_argument("--draft-checkpoint", type=Path, default=None, help="MoA checkpoint whose memory is computed here")
    p.add_argument(
        "--linear",
        default=d.linear,
        choices=LINEAR_CHOICES,
        help="the target's Linear layers: auto (default) packs them for oneDNN on a CPU in float32, ~2x faster;"
        " dense: PyTorch's own kernels (what a client comparing with a dense target needs)",
    )
    p.add_argument("--host", default=d.host, help="address to listen on; anything but loopback needs --token-file")
    p.add_argument("--port", type=int, default=d.port)
    p.add_argument("--token-file", type=Path, default=None, help="file with the bearer token clients must send")
    p.add_argument("--certfile", type=Path, default=None, help="TLS certificate (serves wss://); needs --keyfile")
    p.add_argument("--keyfile", type=Path, default=None)
    p.add_argument(
        "--allow-insecure-token",
        action="store_true",
        help="accept a token off loopback without TLS (only behind a proxy that terminates TLS)",
    )
    p.add_argument("--max-sessions", type=int, default=d.max_sessions)
    p.add_argument("--max-sessions-per-client", type=int, default=None, help="per peer address (default: half)")
    p.add_argument("--max-connections", type=int, default=d.max_connections, help="connections open at once")
    p.add_argument("--max-connections-per-client", type=int, default=None, help="per address (default: a quarter)")
    p.add_argument("--hello-timeout", type=float, default=d.hello_timeout, help="seconds a new connection has")
    p.add_argument("--max-queued-mb", type=int, default=None, help="request bytes queued per connection (2 frames)")
    p.add_argument(
        "--max-queued-total-mb", type=int, default=None, help="over all connections (default: 1/8 of free memory)"
    )
    p.add_argument("--max-context", type=int, default=None, help="tokens per session (default: the target's window)")
    p.add_argument(
        "--max-tree", type=int, default=None, help="drafted nodes per verify (default: 64 on a CPU, 128 on cuda/mps)"
    )
    p.add_argument("--max-frame-bytes", type=int, default=d.max_frame_bytes)
    p.add_argument("--max-batch", type=int, default=d.max_batch, help="sessions verified in one forward pass")
    p.add_argument("--idle-timeout", type=float, default=d.idle_timeout, help="seconds")
    p.add_argument(
        "--kv-memory-mb", type=int, default=None, help="KV budget, LRU evicted beyond (default: half the free memory)"
    )
    p.add_argument("--resume-grace", type=float, default=d.resume_grace, help="seconds a dropped session waits")
    p.add_argument(
        "--no-propose",
        dest="propose",
        action="store_false",
        help="no speculative streaming: announce capabilities.propose false and refuse Generate(propose=True);"
        " clients then speculate in rounds (Verify)",
    )
    p.add_argument(
        "--no-later",
        dest="later",
        action="store_false",
        help="no vectors later: announce capabilities.later false and refuse Prefill(later=True) and Fetch;"
        " clients then prefill in chunks, each reply with its vectors",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


def config_from(args: argparse.Namespace) -> ServerConfig:
    return ServerConfig(
        target=args.target,
        device=args.device,
        draft_checkpoint=args.draft_checkpoint,
        linear=args.linear,
        host=args.host,
        port=args.port,
        token_file=args.token_file,
        certfile=args.certfile,
        keyfile=args.keyfile,
        allow_insecure_token=args.allow_insecure_token,
        max_sessions=args.max_sessions,
        max_sessions_per_client=args.max_sessions_per_client,
        max_connections=args.max_connections,
        max_connections_per_client=args.max_connections_per_client,
        hello_timeout=args.hello_timeout,
        max_queued_mb=args.max_queued_mb,
        max_queued_total_mb=args.max_queued_total_mb,
        max_context=args.max_context,
        max_tree=args.max_tree,
        max_frame_bytes=args.max_frame_bytes,
        max_batch=args.max_batch,
        idle_timeout=args.idle_timeout,
        kv_memory_mb=args.kv_memory_mb,
        resume_grace=args.resume_grace,
        propose=args.propose,
        later=args.later,
    )


def load_backend(config: ServerConfig) -> TransformersBackend:
    """The target (and the MoA server part, if asked) on the chosen device; the KV budget from what is left."""
    device = resolve_device(config.device)
    runner = TargetRunner(load_target(config.target, device, default_dtype(device), config.linear))
    log_event(log, "server.target", target=runner.fingerprint.name, device=str(device), linear=runner.linear)
    compressor = MemoryCompressor.load(config.draft_checkpoint, runner) if config.draft_checkpoint else None
    kv_budget = config.kv_memory_bytes or default_kv_budget_bytes(device)  # measured after the model is loaded
    return TransformersBackend(runner, backend_config(config, kv_budget, device.type), compressor)


def backend_config(
    config: ServerConfig, kv_budget: int | None = None, device_kind: str | None = None
) -> TransformersBackendConfig:
    """The server's limits, as the transformers backend takes them (``kv_budget`` when none is configured;
    the tree limit for a target on ``device_kind``, None: a CPU)."""
    kv = config.kv_memory_bytes or kv_budget
    return TransformersBackendConfig(config.max_context, config.tree_limit(device_kind), config.max_batch, kv)


async def serve(config: ServerConfig, backend: TransformersBackend) -> None:
    """Serve until SIGINT or SIGTERM, then close cleanly (a signal while starting too: the handlers come first)."""
    server = VerifierServer(config, backend)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, _stop, stop, sig)
    try:
        await server.start()
        await stop.wait()
    finally:
        await server.close()


def _stop(stop: asyncio.Event, sig: signal.Signals) -> None:
    log_event(log, "server.signal", signal=sig.name)
    stop.set()


def main(argv: list[str] | None = None) -> int:
    """The program (``argv`` None: the command line, and the process ends here) or a call (tests)."""
    code = run(argv)
    if argv is None:
        leave(code)
    return code


def run(argv: list[str] | None = None) -> int:
    """Parse, load, serve until a signal; the exit code (2 for a refusal the log names)."""
    args = build_parser().parse_args(argv)
    configure_logging(getattr(logging, args.log_level.upper()))
    try:
        config = config_from(args)
        backend = load_backend(config)
        asyncio.run(serve(config, backend))
    except MoaError as exc:
        log_event(log, "server.error", logging.ERROR, error=str(exc))
        return 2
    except OSError as exc:  # the port is taken, a certificate unreadable
        log_event(log, "server.error", logging.ERROR, error=f"{exc}; pick another --port or check the files")
        return 2
    return 0
