"""The remote engine's errors: a branch of moa-chat's one exception tree (:mod:`drafts.errors`).

    MoaError (drafts.errors)
    └── EngineError                  the remote engine cannot go on
        ├── VerifierUnavailableError no verifier answered within the connect timeout
        ├── VerifierRefusedError     the verifier refused the session or a request (.code: ErrorCode)
        └── LinkDownError            the connection dropped (internal: the engine goes offline on it)

Losing the link mid-generation is not an error a caller sees: the engine continues offline and
reports it as events. Only what it cannot recover from reaches the caller.
"""

from __future__ import annotations

from drafts.errors import ErrorCode, MoaError


class EngineError(MoaError):
    """The remote engine cannot go on."""


class VerifierUnavailableError(EngineError):
    """No verifier answered at the configured URL within the connect timeout."""


class VerifierRefusedError(EngineError):
    """The verifier refused: its Error's code and message (which says what to change)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"the verifier refused ({code.value}): {message}")
        self.code = code


class LinkDownError(EngineError):
    """The connection to the verifier dropped; requests in flight got no reply."""
