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
    └── ProtocolError          a wire message is malformed or from another version
"""

from __future__ import annotations


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


class ProtocolError(MoaError):
    """A wire message is malformed or speaks another protocol version."""
