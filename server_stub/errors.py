"""The verifier's own errors: a branch of moa-chat's one exception tree (:mod:`drafts.errors`).

Each carries the :class:`~drafts.errors.ErrorCode` the server reports it as, so the socket
handler turns any of them into an Error reply without a lookup table::

    MoaError (drafts.errors)
    └── ServerError                 .code: ErrorCode
        ├── SessionUnknownError     SESSION_UNKNOWN: expired, evicted or never opened; resend the history
        ├── DraftUnsupportedError   DRAFT_UNSUPPORTED: the backend cannot compute what the draft needs
        ├── TargetMismatchError     TARGET_MISMATCH: the client's draft expects another target model
        ├── ServerBusyError         BUSY: at --max-sessions, or closed for idling; retry or resume
        ├── InvalidRequestError     BAD_FRAME: a well-formed message with content the target cannot run
        ├── RewindOutOfRangeError   UNEXPECTED_MESSAGE: rewind past what the session has committed
        ├── TreeLimitError          TREE_TOO_LARGE: more drafted nodes than the backend verifies at once
        ├── RequestCancelledError   CANCELLED: the client cancelled the request (Cancel, Bye) before it ran
        └── ContextLimitError       CONTEXT_OVERFLOW: the session would outgrow the context (also a
                                    drafts ContextOverflowError, so single-device code catches it too)
"""

from __future__ import annotations

from typing import ClassVar

from drafts.errors import ContextOverflowError, ErrorCode, MoaError


class ServerError(MoaError):
    """A request or session the verifier refuses; ``code`` is what the Error reply carries."""

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL


class SessionUnknownError(ServerError):
    """The session's target state is gone (evicted, expired, never opened).

    The client recovers by replaying: ``Rewind(0)`` (the session is empty again), then
    ``Prefill`` of every committed token but the newest, then ``Verify`` as before.
    """

    code = ErrorCode.SESSION_UNKNOWN


class DraftUnsupportedError(ServerError):
    code = ErrorCode.DRAFT_UNSUPPORTED


class TargetMismatchError(ServerError):
    code = ErrorCode.TARGET_MISMATCH


class ServerBusyError(ServerError):
    code = ErrorCode.BUSY


class InvalidRequestError(ServerError):
    code = ErrorCode.BAD_FRAME


class RewindOutOfRangeError(ServerError):
    code = ErrorCode.UNEXPECTED_MESSAGE


class TreeLimitError(ServerError):
    code = ErrorCode.TREE_TOO_LARGE


class RequestCancelledError(ServerError):
    code = ErrorCode.CANCELLED


class ContextLimitError(ServerError, ContextOverflowError):
    code = ErrorCode.CONTEXT_OVERFLOW


def error_code(exc: BaseException) -> ErrorCode:
    """The code an exception is reported as: its own, CONTEXT_OVERFLOW, or INTERNAL for bugs."""
    code = getattr(exc, "code", None)
    if isinstance(code, ErrorCode):
        return code
    if isinstance(exc, ContextOverflowError):
        return ErrorCode.CONTEXT_OVERFLOW
    return ErrorCode.INTERNAL
