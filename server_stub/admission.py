"""What a server lets in: connections per client and in all, and the bytes of requests waiting to be served.

Both are checked where the work would enter, and a refusal is an Error reply (BUSY) whose
message names the flag that sets the limit, so neither a crowd nor one greedy client can take
the memory or the connection slots every other client needs:

    connections  a new connection beyond --max-connections (or --max-connections-per-client
                 from one address) gets a fatal BUSY and is closed at once
    queued bytes a request frame that would take its connection past --max-queued-mb, or all
                 connections past --max-queued-total-mb, of frames read but not yet answered,
                 gets BUSY for that request alone (the session goes on; retry when replies arrive)

Lives on the event loop: plain counters, no locks.
"""

from __future__ import annotations

from collections import Counter

MIB = 2**20


class ConnectionSlots:
    """Open connections, per client address and in all."""

    def __init__(self, limit: int, per_client: int) -> None:
        self.limit = limit
        self.per_client = per_client
        self.open: Counter[str] = Counter()

    def admit(self, client: str) -> str | None:
        """Take a slot for ``client``: None, or the refusal (nothing taken)."""
        if sum(self.open.values()) >= self.limit:
            return (
                f"the server has {self.limit} connections open, its --max-connections limit; retry in a few "
                "seconds, or ask the operator to raise it"
            )
        if self.open[client] >= self.per_client:
            return (
                f"this client ({client}) has {self.open[client]} connections open, the server's "
                "--max-connections-per-client limit; close some, or retry later"
            )
        self.open[client] += 1
        return None

    def leave(self, client: str) -> None:
        self.open[client] -= 1
        if self.open[client] <= 0:
            del self.open[client]


class QueuedBytes:
    """Bytes of request frames read and not yet answered, over all connections."""

    def __init__(self, per_connection: int, total: int) -> None:
        self.per_connection = per_connection
        self.total = total
        self.used = 0

    def take(self, nbytes: int, connection_used: int) -> str | None:
        """Account ``nbytes`` more for a connection holding ``connection_used``: None, or the refusal."""
        if connection_used + nbytes > self.per_connection:
            return (
                f"this connection has {connection_used / MIB:.1f} MiB of requests waiting; {nbytes / MIB:.1f} MiB "
                f"more is over the server's --max-queued-mb of {self.per_connection / MIB:.0f}; wait for replies "
                "before sending more (prefill in smaller chunks)"
            )
        if self.used + nbytes > self.total:
            return (
                f"the server has {self.used / MIB:.1f} MiB of requests waiting from all clients, near its "
                f"--max-queued-total-mb of {self.total / MIB:.0f}; retry when this connection's replies arrive"
            )
        self.used += nbytes
        return None

    def give(self, nbytes: int) -> None:
        self.used -= nbytes
