"""One WebSocket connection to the verifier: the thin asyncio shell around a sans-I/O :class:`ClientProtocol`.

    open      TCP + WebSocket upgrade (bearer token), Hello -> Welcome, or a fatal Error refusal
    ask       send a request, await its reply (a Generate's streamed parts go to ``on_part`` first)
    receiver  one task reads every frame, feeds the protocol, resolves the matching request
    cancel    ask the server to stop the requests in flight (the protocol's Cancel); their replies
              still come and are dropped

A dead link is noticed at once when the socket fails (a reset, a refused connect), and within
``ping_interval_s + ping_timeout_s`` when it goes silent (keepalive). Either way every request in
flight fails with :class:`LinkDownError` and :attr:`Link.lost` is set (as after ``reply_timeout_s``
without a reply: a reply lost on the way must not stall a generation); a Link is never reused
after that (:mod:`app.engine.session` opens a new one). Nothing here runs a model, and frames
are encoded and decoded on a codec thread (a long replay's vectors take milliseconds), so the
event loop that owns the socket always answers pings on time. An abandoned request (its asker
cancelled) leaves no future behind: its late reply, or the link's loss, is dropped quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from app.engine.config import LinkConfig
from app.engine.errors import LinkDownError, VerifierRefusedError
from drafts import protocol as wire
from drafts.errors import ErrorCode
from drafts.protocol import (
    Answered,
    Bye,
    ClientProtocol,
    Error,
    Fetch,
    Fetched,
    FrameRejected,
    Generate,
    Generated,
    Hello,
    Limits,
    Prefill,
    Prefilled,
    Rewind,
    Rewound,
    SessionState,
    Streamed,
    Verified,
    Verify,
    Welcome,
)

Request = Prefill | Verify | Rewind | Generate | Fetch
Reply = Prefilled | Verified | Rewound | Generated | Fetched
OnPart = Callable[[Generated], None]


@dataclass
class Traffic:
    """Bytes, round trips and answered requests of every connection a session used.

    A round trip is a wait on the network: a request and its reply. Requests sent ``pipelined``
    behind one in flight (a long prompt's Prefill chunks, behind the Rewind or the chunk before)
    share its round trip, as their replies share its latency; ``requests`` counts every answered one.
    """

    bytes_up: int = 0
    bytes_down: int = 0
    round_trips: int = 0
    requests: int = 0


class Link:
    """One connection; see the module docstring. Build it with ``await Link.open(...)``."""

    def __init__(self, ws: ClientConnection, config: LinkConfig, traffic: Traffic) -> None:
        self.ws = ws
        self.config = config
        self.traffic = traffic
        self.protocol = ClientProtocol(Limits(max_frame_bytes=config.max_frame_bytes))
        self.welcome: Welcome | None = None
        self.notices: list[Error] = []  # non-fatal session-level Errors (SESSION_UNKNOWN before a new session)
        self.lost = asyncio.Event()
        self.lost_reason = ""
        self.lost_at: float | None = None  # perf_counter when the drop was noticed
        self._welcomed: asyncio.Future[Welcome] = asyncio.get_running_loop().create_future()
        self._pending: dict[int, asyncio.Future[Reply]] = {}
        self._on_part: dict[int, OnPart] = {}  # request_id -> where a Generate's streamed parts go
        self._codec = ThreadPoolExecutor(1, thread_name_prefix="moa-codec")  # the protocol's only thread
        self._receiver = asyncio.get_running_loop().create_task(self._receive())

    @classmethod
    async def open(cls, config: LinkConfig, hello: Hello, traffic: Traffic) -> Link:
        """Connect and open a session; raises LinkDownError (unreachable) or VerifierRefusedError."""
        headers = {"Authorization": f"Bearer {config.token}"} if config.token else None
        try:
            ws = await connect(
                config.url,
                additional_headers=headers,
                open_timeout=config.open_timeout_s,
                ping_interval=config.ping_interval_s,
                ping_timeout=config.ping_timeout_s,
                close_timeout=config.close_timeout_s,
                max_size=None,  # the protocol's Limits check each frame, with a message that says why
                compression=None,  # activations do not deflate
                proxy=None,  # the verifier is reached directly (or through the link shaper on loopback)
            )
        except InvalidStatus as exc:
            if exc.response.status_code == 401:
                raise VerifierRefusedError(
                    ErrorCode.UNAUTHORIZED, "the server wants a bearer token: pass the one from its --token-file"
                ) from exc
            raise LinkDownError(f"the WebSocket upgrade failed: {exc}") from exc
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise LinkDownError(f"cannot connect to {config.url}: {exc or type(exc).__name__}") from exc
        link = cls(ws, config, traffic)
        try:
            await link._hello(hello)
        except BaseException:
            await link.abort()
            raise
        return link

    async def _hello(self, hello: Hello) -> None:
        await self._send(await self._encode(hello))
        try:
            self.welcome = await asyncio.wait_for(asyncio.shield(self._welcomed), self.config.open_timeout_s)
        except TimeoutError as exc:
            raise LinkDownError(f"no Welcome within {self.config.open_timeout_s:g} s") from exc

    # -- requests --------------------------------------------------------------------------------
    async def ask(self, request: Request, on_part: OnPart | None = None, pipelined: bool = False) -> Reply:
        """Send ``request`` and wait for its reply; an Error reply raises VerifierRefusedError.

        A Generate's parts before its last go to ``on_part`` as they arrive, on this loop.
        ``pipelined``: sent behind a request in flight, on its round trip (see Traffic).
        """
        if self.lost.is_set():
            raise LinkDownError(self.lost_reason)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        if not pipelined:
            self.traffic.round_trips += 1
        self._pending[request.request_id] = future
        heard = [time.perf_counter()]  # when the request went out, then when its last part came
        if on_part is not None:

            def part_heard(part: Generated, show: OnPart = on_part) -> None:
                heard.append(time.perf_counter())
                show(part)

            self._on_part[request.request_id] = part_heard
        try:
            frame = await self._encode(request)
            self.traffic.bytes_up += len(frame)
            await self._send(frame)
            return await self._reply(future, heard)
        finally:
            self._on_part.pop(request.request_id, None)
            if not future.done():  # abandoned: nobody will read what it gets
                self._pending.pop(request.request_id, None)
                future.cancel()

    async def cancel(self) -> None:
        """Ask the server to stop every request in flight (a no-op with a server older than Cancel)."""
        cancel = getattr(wire, "Cancel", None)
        if cancel is None or self.lost.is_set() or self.protocol.state is not SessionState.OPEN:
            return
        for request_id in list(self._pending):
            frame = await self._encode(cancel(request_id))
            self.traffic.bytes_up += len(frame)
            await self._send(frame)

    async def tell(self, message: Any) -> None:
        """Send a message that has no reply of its own (a Propose); nothing once the link is lost."""
        if self.lost.is_set() or self.protocol.state is not SessionState.OPEN:
            return
        frame = await self._encode(message)
        self.traffic.bytes_up += len(frame)
        await self._send(frame)

    async def _encode(self, message: Any) -> bytes:
        frame: bytes = await asyncio.get_running_loop().run_in_executor(self._codec, self.protocol.send, message)
        return frame

    async def _reply(self, future: asyncio.Future[Reply], heard: list[float]) -> Reply:
        """``future``'s reply; a silence of ``reply_timeout_s`` (no reply, no part) marks the link lost."""
        timeout = self.config.reply_timeout_s
        while True:
            left = heard[-1] + timeout - time.perf_counter()
            try:
                return await asyncio.wait_for(asyncio.shield(future), max(left, 0.0))
            except TimeoutError:
                if heard[-1] + timeout > time.perf_counter():
                    continue  # a part came meanwhile
                self._mark_lost(f"no reply from the verifier within {timeout:g} s")
                raise LinkDownError(self.lost_reason) from None

    def new_request_id(self) -> int:
        return self.protocol.new_request_id()

    async def close(self) -> None:
        """End the session politely (Bye) and close the connection."""
        if not self.lost.is_set() and self.protocol.state is SessionState.OPEN:
            with contextlib.suppress(ConnectionClosed, OSError):
                await self.ws.send(await self._encode(Bye()))
        await self.abort()

    async def abort(self) -> None:
        """Drop the connection without a Bye (the session stays resumable on the server)."""
        was_lost = self.lost.is_set()
        self._mark_lost("closed by this client")
        self._receiver.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._receiver
        self._codec.shutdown(wait=False, cancel_futures=True)
        if was_lost:  # a dead link answers no closing handshake: do not wait for one
            self.ws.transport.abort()
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), self.config.close_timeout_s)

    # -- the receiver ----------------------------------------------------------------------------
    async def _send(self, frame: bytes) -> None:
        try:
            await self.ws.send(frame)
        except (ConnectionClosed, OSError) as exc:
            self._mark_lost(_describe(exc))

    async def _receive(self) -> None:
        try:
            while True:
                frame = await self.ws.recv(decode=False)
                self.traffic.bytes_down += len(frame)
                loop = asyncio.get_running_loop()
                for event in await loop.run_in_executor(self._codec, self.protocol.receive, frame):
                    await self._dispatch(event)
                if self.protocol.state is SessionState.CLOSED:
                    self._mark_lost("the session was closed by a fatal error")
                    return
        except (ConnectionClosed, OSError) as exc:
            self._mark_lost(_describe(exc))

    async def _dispatch(self, event: object) -> None:
        if isinstance(event, Welcome):
            self._welcomed.set_result(event)
        elif isinstance(event, Streamed):
            on_part = self._on_part.get(event.request.request_id)
            if on_part is not None:
                on_part(event.part)
        elif isinstance(event, Answered):
            self.traffic.requests += 1
            future = self._pending.pop(event.request.request_id, None)
            if future is not None and not future.done():
                reply = event.reply
                if isinstance(reply, Error):
                    future.set_exception(VerifierRefusedError(reply.code, reply.message))
                else:
                    future.set_result(reply)
        elif isinstance(event, Error):  # session-level: a notice, or the end of the session
            if event.fatal:
                self._refuse(VerifierRefusedError(event.code, event.message))
            else:
                self.notices.append(event)
        elif isinstance(event, FrameRejected):  # the server sent something this client cannot trust
            with contextlib.suppress(ConnectionClosed, OSError):
                await self.ws.send(event.reply)
            self._refuse(VerifierRefusedError(event.error.code, event.error.message))

    def _refuse(self, error: VerifierRefusedError) -> None:
        if error.code is ErrorCode.BUSY:  # at capacity, or closed for idling: the session stays resumable
            self._mark_lost(str(error))
            return
        if not self._welcomed.done():
            self._welcomed.set_exception(error)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        self._mark_lost(str(error))

    def _mark_lost(self, reason: str) -> None:
        if self.lost.is_set():
            return
        self.lost_reason, self.lost_at = reason, time.perf_counter()
        self.lost.set()
        error = LinkDownError(reason)
        if not self._welcomed.done():
            self._welcomed.set_exception(error)
            self._welcomed.exception()  # retrieved: nobody may be waiting any more
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionClosed):
        return f"the connection dropped ({exc})"
    return f"the socket failed ({exc})"
