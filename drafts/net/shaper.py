"""A user-space TCP link shaper: a loopback proxy that delays, throttles and cuts, switchable live.

This kernel has no netem qdisc, so the shaping happens in a proxy. A client connects to the
shaper's port, the shaper dials the upstream server, and each connection gets two pumps, one
per direction, each a stamper and a deliverer joined by a bounded queue:

    client ──► stamp ──queue──► deliver ──► server     up
    client ◄── deliver ◄──queue── stamp ◄── server     down

The stamper reads what arrived, cuts it into chunks and gives each chunk its delivery time:
the token bucket says when the chunk is on the wire, the profile adds latency, jitter and any
retransmission (:mod:`drafts.net.link`). Delivery times never decrease, so jitter cannot
reorder bytes and a retransmitted chunk holds back the ones behind it, as in TCP. The
deliverer sleeps until each time and writes. A direction's token bucket is shared by all
connections: the bandwidth belongs to the link, not to each connection.

Timing is as good as the event loop's timers, which epoll keeps to whole milliseconds rounded
up: each delivery comes out up to 1-2 ms late, never early, so a profile's delays are floors.

Going offline closes the listening socket, so new connects are refused, and resets every open
connection both ways (RST, not FIN: each end sees the link fail, not a polite close). Going
back online listens again on the same port.

The shaper listens on loopback only unless told ``allow_remote=True`` (``--allow-remote``): it
forwards to a verifier that may be serving loopback without a token, and listening on another
address would hand that tokenless server to the network.

:class:`LinkShaper` lives on the caller's asyncio loop; :class:`~drafts.net.shaper_thread.ShaperThread`
runs one on its own loop in a background thread, for synchronous code, tests, and programs that
own other loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import ipaddress
import random
import socket
import struct
from dataclasses import dataclass
from typing import TypeVar

from drafts.errors import ConfigError
from drafts.net.link import PRESETS, LinkProfile, TokenBucket

CHUNK_BYTES = 4096  # unit of jitter, loss and bandwidth: about three TCP segments
READ_BYTES = 65536  # most one read takes from a socket
QUEUE_CHUNKS = 256  # chunks in flight per direction (1 MiB) before the sender feels backpressure

T = TypeVar("T")


class Direction(enum.Enum):
    UP = "up"  # client → upstream server
    DOWN = "down"  # upstream server → client


@dataclass(frozen=True)
class LinkStats:
    """Counters since the shaper started."""

    bytes_up: int  # delivered to the upstream server
    bytes_down: int  # delivered to clients
    connections: int  # accepted while online
    cut_connections: int  # reset by a switch to offline
    open_connections: int  # being proxied now


@dataclass(eq=False)  # identity, so it can sit in a set
class _Connection:
    """One proxied connection: the task that serves it and the writers of its two ends."""

    number: int
    task: asyncio.Task[None]
    writers: list[asyncio.StreamWriter]
    was_cut: bool = False  # by the shaper (offline, close), not by either end

    def reset(self) -> None:
        for writer in self.writers:
            _reset(writer)

    def cut(self) -> None:
        self.was_cut = True
        self.reset()
        self.task.cancel()


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host`` (a name other than localhost may resolve anywhere)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_loopback(host: str, allow_remote: bool) -> None:
    if not allow_remote and not is_loopback(host):
        raise ConfigError(
            f"the link shaper would listen on {host}, reachable from other machines, and forward them to a "
            "verifier that may take no token on loopback; listen on 127.0.0.1, or pass --allow-remote "
            "(allow_remote=True) if that is what you mean"
        )


def _reset(writer: asyncio.StreamWriter) -> None:
    """Abort with an RST rather than a FIN, so the peer sees the connection fail at once."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class LinkShaper:
    """A TCP proxy from ``listen_host:port`` to the upstream server, shaped by a :class:`LinkProfile`.

    Build it with ``await LinkShaper.start(...)``; switch with ``await set_profile(...)``;
    finish with ``await close()``.
    """

    def __init__(self, listen_host: str, upstream_host: str, upstream_port: int, profile: LinkProfile, seed: int):
        self.listen_host = listen_host
        self.upstream = (upstream_host, upstream_port)
        self._profile = profile
        self._seed = seed  # jitter and loss draw from Random(f"{seed}:{connection}:{direction}")
        self._server: asyncio.Server | None = None  # None while offline
        self._port = 0
        self._open: set[_Connection] = set()
        self._buckets = {d: TokenBucket(burst_bytes=CHUNK_BYTES) for d in Direction}
        self._bytes = dict.fromkeys(Direction, 0)
        self._connections = 0
        self._cut = 0
        self._switching = asyncio.Lock()  # one switch at a time: going online awaits the listener

    @classmethod
    async def start(
        cls,
        *,
        upstream_host: str = "127.0.0.1",
        upstream_port: int,
        profile: LinkProfile = PRESETS["lan"],
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        seed: int = 0,
        allow_remote: bool = False,
    ) -> LinkShaper:
        """Listen on ``listen_host:listen_port`` (0 picks a free port, see :attr:`port`); loopback unless allowed."""
        require_loopback(listen_host, allow_remote)
        shaper = cls(listen_host, upstream_host, upstream_port, profile, seed)
        await shaper._listen(listen_port)
        if profile.offline:  # the port is reserved above, so going online later reuses it
            shaper._stop_listening()
        return shaper

    @property
    def port(self) -> int:
        """The port clients connect to; it stays the same across offline spells."""
        return self._port

    @property
    def profile(self) -> LinkProfile:
        return self._profile

    async def set_profile(self, profile: LinkProfile) -> None:
        """Switch the link now. Chunks already stamped keep their times; later ones use ``profile``.

        Coming back online listens on the same port again; should another program have taken
        it meanwhile, the OSError propagates and the shaper stays offline.
        """
        async with self._switching:
            if profile.offline and not self._profile.offline:
                self._profile = profile
                self._stop_listening()
                self._cut += self._reset_all()
            elif self._profile.offline and not profile.offline:
                await self._listen(self._port)
                self._profile = profile
            else:
                self._profile = profile

    def stats(self) -> LinkStats:
        return LinkStats(
            bytes_up=self._bytes[Direction.UP],
            bytes_down=self._bytes[Direction.DOWN],
            connections=self._connections,
            cut_connections=self._cut,
            open_connections=len(self._open),
        )

    async def close(self) -> None:
        """Stop listening, reset every open connection and wait for their tasks to end."""
        self._stop_listening()
        tasks = [conn.task for conn in self._open]
        self._reset_all()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _listen(self, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, self.listen_host, port, reuse_address=True)
        self._port = self._server.sockets[0].getsockname()[1]

    def _stop_listening(self) -> None:
        if self._server is not None:
            self._server.close()  # closes the listening socket now; open connections are ours to handle
            self._server = None

    def _reset_all(self) -> int:
        open_now, self._open = list(self._open), set()
        for conn in open_now:
            conn.cut()
        return len(open_now)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        if self._profile.offline:  # accepted in the instant before the listener closed
            _reset(client_w)
            return
        task = asyncio.current_task()
        assert task is not None  # start_server runs each handler as a task
        conn = _Connection(self._connections, task, [client_w])
        self._connections += 1
        self._open.add(conn)
        try:
            await self._proxy(conn, client_r, client_w)
        except asyncio.CancelledError:
            if not conn.was_cut:
                raise
            task.uncancel()  # our own cut is this handler's normal end, not an error for asyncio to log
        finally:
            self._open.discard(conn)
            for writer in conn.writers:
                writer.close()

    async def _proxy(self, conn: _Connection, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        # The client's connect to us took no time; a real one takes the handshake's round trip.
        await asyncio.sleep(self._profile.rtt_ms / 1000.0)
        try:
            upstream_r, upstream_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            conn.reset()  # the server is down: the client sees its connection fail
            return
        conn.writers.append(upstream_w)
        try:
            async with asyncio.TaskGroup() as pumps:
                pumps.create_task(self._pump(client_r, upstream_w, Direction.UP, conn.number))
                pumps.create_task(self._pump(upstream_r, client_w, Direction.DOWN, conn.number))
        except* OSError:
            conn.reset()  # one end failed (reset, broken pipe): the other end learns it the same way

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, direction: Direction, number: int
    ) -> None:
        """Carry one direction of one connection until its end-of-file has been delivered."""
        queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue(QUEUE_CHUNKS)
        rng = random.Random(f"{self._seed}:{number}:{direction.value}")
        async with asyncio.TaskGroup() as halves:
            halves.create_task(self._stamp(src, queue, direction, rng))
            halves.create_task(self._deliver(queue, dst, direction))

    async def _stamp(
        self,
        src: asyncio.StreamReader,
        queue: asyncio.Queue[tuple[float, bytes | None]],
        direction: Direction,
        rng: random.Random,
    ) -> None:
        """Read, cut into chunks, and queue each with its delivery time; ``None`` marks end-of-file."""
        loop = asyncio.get_running_loop()
        bucket = self._buckets[direction]
        due = 0.0  # delivery time of the previous chunk: times never decrease, so bytes keep their order
        while data := await src.read(READ_BYTES):
            for start in range(0, len(data), CHUNK_BYTES):
                chunk = data[start : start + CHUNK_BYTES]
                profile = self._profile  # read per chunk: a switch applies from the next chunk
                on_wire = bucket.reserve(len(chunk), loop.time(), profile.bandwidth_bps)
                due = max(due, on_wire + profile.delay_s(rng))
                await queue.put((due, chunk))
        await queue.put((max(due, loop.time() + self._profile.latency_ms / 1000.0), None))  # the FIN travels too

    async def _deliver(
        self, queue: asyncio.Queue[tuple[float, bytes | None]], dst: asyncio.StreamWriter, direction: Direction
    ) -> None:
        """Write each chunk at its delivery time; pass end-of-file on as a half-close."""
        loop = asyncio.get_running_loop()
        while True:
            due, chunk = await queue.get()
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            if chunk is None:
                if dst.can_write_eof():
                    dst.write_eof()
                return
            dst.write(chunk)
            await dst.drain()
            self._bytes[direction] += len(chunk)
