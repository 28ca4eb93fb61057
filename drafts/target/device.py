"""Choosing the device and dtype a model runs on (``--device auto|cpu|cuda|mps``)."""

from __future__ import annotations

import torch

from drafts.errors import ConfigError, DeviceUnavailableError

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")
DTYPE_CHOICES = ("auto", "float32", "bfloat16", "float16")


def is_accelerator(device_kind: str | None) -> bool:
    """Whether a target on ``device_kind`` (a torch device type, as a verifier's Welcome says it; None: unsaid,
    taken for a CPU) runs on an accelerator (cuda, mps), where a wide verify costs about one step."""
    return device_kind not in (None, "cpu")


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` picks cuda, then mps, then cpu; a named device must exist."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    kind = name.split(":")[0]
    if kind not in DEVICE_CHOICES:
        raise DeviceUnavailableError(f"unknown device {name!r}; use one of {', '.join(DEVICE_CHOICES)}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError("--device cuda, but torch sees no CUDA GPU here; use --device auto or cpu")
    if kind == "mps" and not _mps_available():
        raise DeviceUnavailableError("--device mps, but Apple MPS is not available here; use --device auto or cpu")
    return torch.device(name)


def default_dtype(device: torch.device) -> torch.dtype:
    """bf16 on CUDA, fp16 on MPS, fp32 on CPU (exact greedy equality is checked in fp32)."""
    if device.type == "cuda":
        return torch.bfloat16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """``auto`` is :func:`default_dtype`; otherwise the named dtype (bfloat16 suits CPUs with AMX).

    Outside float32, a verification pass over several tokens may round differently from a
    one-token step, so speculative output can drift from plain decoding where two tokens nearly tie.
    """
    if name == "auto":
        return default_dtype(device)
    if name not in DTYPE_CHOICES:
        raise ConfigError(f"unknown dtype {name!r}; use one of {', '.join(DTYPE_CHOICES)}")
    dtype: torch.dtype = getattr(torch, name)
    return dtype


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
