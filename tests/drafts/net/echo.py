"""Echo servers on 127.0.0.1 for the shaper tests: one on the test's asyncio loop, one in a thread."""

from __future__ import annotations

import asyncio
import socketserver
import threading


async def start_echo_server() -> tuple[asyncio.Server, int]:
    """An asyncio echo server on a free loopback port; it half-closes when the client does."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
            writer.write_eof()
        except OSError:
            pass  # the shaper reset us
        finally:
            writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


class _EchoHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            while data := self.request.recv(65536):
                self.request.sendall(data)
        except OSError:
            pass


class ThreadedEchoServer(socketserver.ThreadingTCPServer):
    """A blocking echo server for synchronous tests: ``with ThreadedEchoServer() as server: server.port``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _EchoHandler)
        self.port: int = self.server_address[1]
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> ThreadedEchoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(5)
