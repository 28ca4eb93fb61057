"""moa-server: the verifier. A websockets server whose connections share one target backend.

    client ──wss──► VerifierServer ── Connection (ServerProtocol) per client
                                  ── SessionRegistry (owners, resume grace, generators)
                                  ── InferenceWorker (one thread) ──► TargetBackend (batched verify)

The event loop only moves bytes and state; every target pass runs on the worker thread, so
keepalive pings are answered while the model computes. The HTTP upgrade is refused with 401
unless the client sends ``Authorization: Bearer <token>`` when a token is configured (always,
off loopback). TLS when a certificate is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from http import HTTPStatus

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

from drafts.protocol import Capabilities
from server_stub.admission import ConnectionSlots, QueuedBytes
from server_stub.auth import authorized, read_token
from server_stub.backend.base import TargetBackend
from server_stub.config import ServerConfig
from server_stub.connection import Connection
from server_stub.logs import Throttle, log_event
from server_stub.payloads import PAYLOAD
from server_stub.services import Services
from server_stub.sessions import SessionRegistry
from server_stub.worker import InferenceWorker

log = logging.getLogger(__name__)
PING_INTERVAL_S = 10.0  # a dead client is noticed within ~20 s; its session then waits resume_grace
SOCKET_QUEUE_FRAMES = 4  # per connection; the request queue and its byte limits hold the rest


class VerifierServer:
    """Serves ``backend`` on ``config.host:config.port``; ``start`` binds, ``close`` shuts down cleanly."""

    def __init__(self, config: ServerConfig, backend: TargetBackend) -> None:
        self.config = config
        self.backend = backend
        self.worker = InferenceWorker(backend)
        self.registry = SessionRegistry(
            config.max_sessions, config.resume_grace, self._expired, config.sessions_per_client
        )
        self._token = read_token(config.token_file) if config.token_file else None
        self._server: Server | None = None
        self._closed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()  # background closes of expired sessions
        self.rejections = Throttle()  # refused frames, handshakes and connections: a few log lines per window
        self.services: Services | None = None  # once started

    @property
    def port(self) -> int:
        """The bound port (the real one when ``config.port`` is 0)."""
        assert self._server is not None, "start() the server first"
        return int(next(iter(self._server.sockets)).getsockname()[1])

    @property
    def url(self) -> str:
        scheme = "wss" if self.config.certfile else "ws"
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        return f"{scheme}://{host}:{self.port}"

    async def start(self) -> None:
        caps = self.backend.capabilities()
        max_tree = min(caps.max_tree_nodes, self.config.tree_limit(caps.device_kind))
        services = Services(
            config=self.config,
            worker=self.worker,
            registry=self.registry,
            backend_caps=caps,
            limits=self.config.limits(caps.target.vocab_size, max_tree),
            capabilities=Capabilities(
                max_context=caps.max_context,
                max_tree_nodes=max_tree,
                max_frame_bytes=self.config.max_frame_bytes,
                payload=PAYLOAD,
                batching=caps.batching,
                device_kind=caps.device_kind,
                propose=self.config.propose,  # speculative streaming: Generate(propose=True) takes Propose messages
                later=self.config.later,  # vectors later: Prefill(later=True) keeps them for Fetch
            ),
            slots=ConnectionSlots(self.config.max_connections, self.config.connections_per_client),
            queued=QueuedBytes(self.config.queued_bytes, self.config.queued_total_bytes()),
            rejections=self.rejections,
        )
        self.services = services

        async def handle(websocket: ServerConnection) -> None:
            try:
                await Connection(websocket, services).run()
            except Exception:  # the last boundary: one connection's bug never reaches the others
                log.exception("connection.failed", extra={"fields": {"peer": str(websocket.remote_address)}})

        self.worker.start()
        self._server = await serve(
            handle,
            self.config.host,
            self.config.port,
            process_request=self._authorize if self._token else None,
            ssl=self._tls(),
            max_size=self.config.socket_max_bytes,
            max_queue=SOCKET_QUEUE_FRAMES,  # frames websockets buffers before TCP pushes back (not 16 x 128 MB)
            compression=None,  # activations do not deflate; compressing them only costs CPU
            ping_interval=PING_INTERVAL_S,
            ping_timeout=PING_INTERVAL_S,
        )
        log_event(
            log,
            "server.start",
            url=self.url,
            target=caps.target.name,
            auth=self._token is not None,
            tls=self.config.certfile is not None,
            memory_draft=caps.memory_draft_id,
            max_sessions=self.config.max_sessions,
            max_sessions_per_client=self.config.sessions_per_client,
            max_connections=self.config.max_connections,
            max_connections_per_client=self.config.connections_per_client,
            max_queued_mb=round(services.queued.per_connection / 2**20, 1),
            max_queued_total_mb=round(services.queued.total / 2**20, 1),
            kv_memory_mb=_kv_budget_mb(self.backend),
        )

    async def close(self) -> None:
        """Stop listening, close every connection (1001), forget the sessions, stop the worker."""
        if self._server is not None and not self._closed.is_set():
            self._server.close()
            await self._server.wait_closed()
            self.registry.clear()
            await self.worker.stop()
            log_event(log, "server.stop", batches=dict(sorted(self.worker.batch_sizes.items())))
        self._closed.set()

    def _authorize(self, connection: ServerConnection, request: Request) -> Response | None:
        assert self._token is not None
        values = request.headers.get_all("Authorization")
        if len(values) > 1:  # Headers.get would raise (an HTTP 500 with a traceback): answer it
            self.rejections.log(log, "auth.refused", peer=str(connection.remote_address), reason="duplicate header")
            return connection.respond(
                HTTPStatus.BAD_REQUEST, "send one Authorization header ('Authorization: Bearer <token>'), not several\n"
            )
        if authorized(values[0] if values else None, self._token):
            return None
        self.rejections.log(log, "auth.refused", peer=str(connection.remote_address))
        response = connection.respond(
            HTTPStatus.UNAUTHORIZED,
            "moa-server needs a bearer token: send 'Authorization: Bearer <token>' with the token from the "
            "server's --token-file\n",
        )
        response.headers["WWW-Authenticate"] = "Bearer"
        return response

    def _tls(self) -> ssl.SSLContext | None:
        if self.config.certfile is None or self.config.keyfile is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.config.certfile, self.config.keyfile)
        return context

    def _expired(self, session_id: str) -> None:
        log_event(log, "session.expired", session=session_id)

        async def close() -> None:
            with contextlib.suppress(RuntimeError):  # the worker has stopped: the backend goes with it
                await self.worker.call(lambda backend: backend.close(session_id), session_id)

        task = asyncio.get_running_loop().create_task(close())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _kv_budget_mb(backend: TargetBackend) -> float | None:
    """The backend's KV budget for the start log, if it has one to report."""
    budget = getattr(getattr(backend, "config", None), "kv_memory_bytes", None)
    return None if budget is None else round(budget / 2**20, 1)
