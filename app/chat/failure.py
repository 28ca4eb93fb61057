"""What went wrong, in words for the app: a title and a message, never a traceback.

Every error moa-chat raises on purpose (:class:`~drafts.errors.MoaError`) already says how to fix
it; this adds a short title per kind so a notification reads at a glance. Anything else is a bug:
it gets its type and message, and the app goes on.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.errors import EngineError, VerifierRefusedError, VerifierUnavailableError
from app.store.errors import StoreError
from drafts.errors import (
    CheckpointError,
    ConfigError,
    ContextOverflowError,
    ErrorCode,
    MoaError,
    ModelLoadError,
)

REFUSALS: dict[ErrorCode, str] = {
    ErrorCode.UNAUTHORIZED: "The verifier refused the token",
    ErrorCode.TARGET_MISMATCH: "The verifier runs another target",
    ErrorCode.DRAFT_UNSUPPORTED: "The verifier cannot serve this draft",
    ErrorCode.UNSUPPORTED_VERSION: "The verifier speaks another protocol version",
    ErrorCode.CONTEXT_OVERFLOW: "The conversation is too long for the target",
    ErrorCode.BUSY: "The verifier is busy",
}


@dataclass(frozen=True)
class Failure:
    title: str
    message: str


def describe(exc: BaseException) -> Failure:
    """The words for ``exc``; see the module docstring."""
    if isinstance(exc, VerifierRefusedError):
        return Failure(REFUSALS.get(exc.code, "The verifier refused"), str(exc))
    if isinstance(exc, VerifierUnavailableError):
        return Failure("No verifier", str(exc))
    for kind, title in (
        (StoreError, "Cannot save the conversation"),
        (ModelLoadError, "A model is missing"),
        (CheckpointError, "The draft cannot be loaded"),
        (ContextOverflowError, "The conversation is too long"),
        (ConfigError, "A setting is wrong"),
        (EngineError, "The engine stopped"),
        (MoaError, "moa-chat cannot go on"),
    ):
        if isinstance(exc, kind):
            return Failure(title, str(exc))
    return Failure("Unexpected error", f"{type(exc).__name__}: {exc}")
