"""The one exception tree of moa-chat.

Every error a user can cause carries a message that names the cause and the fix.

    MoaError
    ├── ConfigError            a flag, option or configuration value is invalid
    │   └── DeviceUnavailableError   --device names a device this machine lacks
    ├── ModelLoadError         a target model cannot be found or loaded
    │   └── UnsupportedArchitectureError   transformers cannot load this architecture
    ├── ContextOverflowError   a prompt or generation exceeds the model's context
    ├── DatasetError           a prompt/training file is missing, empty or malformed
    ├── CheckpointError        a draft checkpoint is missing, corrupt or for another target
    └── ProtocolError          a wire message is malformed or from another version (.code: ErrorCode)
        ├── MalformedFrameError      BAD_FRAME: truncated, bad magic, bad header, fields or tensors
        ├── UnsupportedVersionError  UNSUPPORTED_VERSION: the peer speaks another wire or protocol version
        ├── FrameTooLargeError       TOO_LARGE: a frame, header or tensor is over the receiver's Limits
        │   └── TreeTooLargeError    TREE_TOO_LARGE: a Verify drafts more nodes than the server takes
        └── UnexpectedMessageError   UNEXPECTED_MESSAGE: a well-formed message in the wrong session state

``ErrorCode`` is what a verifier session reports to its peer in an Error message
(:mod:`drafts.protocol`); each ProtocolError subclass names the code it is reported as.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar


class MoaError(Exception):
    """Base of every error moa-chat raises on purpose."""


class ConfigError(MoaError):
    """An invalid option or configuration value."""


class DeviceUnavailableError(ConfigError):
    """The requested device (cuda, mps) is not available on this machine."""


class ModelLoadError(MoaError):
    """A target model could not be found or loaded."""


class UnsupportedArchitectureError(ModelLoadError):
    """The model's architecture is not one transformers can load."""


class ContextOverflowError(MoaError):
    """A prompt, or prompt plus generation, does not fit the model's context window."""


class DatasetError(MoaError):
    """A dataset file is missing, empty or malformed."""


class CheckpointError(MoaError):
    """A draft checkpoint is missing, corrupt, or was trained for another target."""


class ErrorCode(Enum):
    """Why a verifier session refused a message: sent to the peer in an Error message."""

    BAD_FRAME = "BAD_FRAME"  # the bytes are not a well-formed frame of this protocol
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"  # the peer speaks another wire or protocol version
    TARGET_MISMATCH = "TARGET_MISMATCH"  # the client's target fingerprint is not the server's model
    DRAFT_UNSUPPORTED = "DRAFT_UNSUPPORTED"  # the server cannot serve the activations this draft needs
    UNAUTHORIZED = "UNAUTHORIZED"  # the client may not use this server
    TOO_LARGE = "TOO_LARGE"  # a frame, header or tensor is over the receiver's limits
    CONTEXT_OVERFLOW = "CONTEXT_OVERFLOW"  # the session would outgrow the target's context window
    TREE_TOO_LARGE = "TREE_TOO_LARGE"  # a draft tree has more nodes than the server verifies at once
    SESSION_UNKNOWN = "SESSION_UNKNOWN"  # the session to resume has expired or never existed
    BUSY = "BUSY"  # the server is at capacity; retry later
    INTERNAL = "INTERNAL"  # the server failed; not the client's fault
    UNEXPECTED_MESSAGE = "UNEXPECTED_MESSAGE"  # a well-formed message arrived in the wrong session state
    CANCELLED = "CANCELLED"  # the client cancelled the request before it started; nothing changed


class ProtocolError(MoaError):
    """A wire message is malformed or speaks another protocol version.

    ``code`` is the ErrorCode a session reports it as; ``request_id`` names the request the
    offending frame belonged to, when the frame got far enough to tell.
    """

    code: ClassVar[ErrorCode] = ErrorCode.BAD_FRAME

    def __init__(self, message: str, *, request_id: int | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


class MalformedFrameError(ProtocolError):
    """A frame that is truncated, has a bad prefix, header, field or tensor."""

    code = ErrorCode.BAD_FRAME


class UnsupportedVersionError(ProtocolError):
    """The peer speaks another wire-format or protocol version."""

    code = ErrorCode.UNSUPPORTED_VERSION


class FrameTooLargeError(ProtocolError):
    """A frame, its header or one of its tensors is over the receiver's limits."""

    code = ErrorCode.TOO_LARGE


class TreeTooLargeError(FrameTooLargeError):
    """A Verify message drafts more tree nodes than the server verifies at once."""

    code = ErrorCode.TREE_TOO_LARGE


class UnexpectedMessageError(ProtocolError):
    """A well-formed message that the session's current state does not allow."""

    code = ErrorCode.UNEXPECTED_MESSAGE
