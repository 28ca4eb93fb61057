"""A stand-in verifier for the demo's process tests: a real TCP echo server that logs like moa-server.

    python echo_server.py --port P [--delay S] [--fail MESSAGE]

It writes moa-server's JSON log lines on stderr (``server.start`` once listening, ``server.error``
before giving up), echoes every byte back, and exits 0 on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import threading
import time


def log(event: str, **fields: object) -> None:
    print(json.dumps({"level": "info", "event": event, **fields}), file=sys.stderr, flush=True)


def echo(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(65536):
            conn.sendall(data)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--fail", default="")
    args, _ = p.parse_known_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    log("loading", delay=args.delay)
    time.sleep(args.delay)
    if args.fail:
        log("server.error", error=args.fail)
        return 2
    server = socket.create_server(("127.0.0.1", args.port), reuse_port=False)
    log("server.start", url=f"ws://127.0.0.1:{args.port}")
    while True:
        conn, _ = server.accept()
        threading.Thread(target=echo, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    raise SystemExit(main())
