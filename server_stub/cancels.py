"""Cancellation of one request: set by its connection (Cancel, Bye, a drop), read by the work it started.

The connection's reader sets it at once, ahead of the request queue; the request's coroutine
checks it between decoding steps, and the inference worker checks it before it runs a queued job,
so cancelled work stops within one step. A plain flag suffices across the two threads: it only
ever goes from False to True, and one step late is the documented bound.
"""

from __future__ import annotations

from server_stub.errors import RequestCancelledError


class CancelToken:
    """Whether the client still wants a request answered."""

    def __init__(self) -> None:
        self.cancelled = False
        self.reason = ""

    def cancel(self, reason: str) -> None:
        if not self.cancelled:
            self.cancelled, self.reason = True, reason

    def check(self, request_id: int) -> None:
        """Raise RequestCancelledError if the request was cancelled (before it changed anything)."""
        if self.cancelled:
            raise RequestCancelledError(
                f"request {request_id} was cancelled ({self.reason}) before it ran; the session is unchanged"
            )
