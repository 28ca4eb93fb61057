"""Test session settings: offline hub, one torch thread (the machine is small and shared)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402  (after the environment is set)

torch.set_num_threads(1)
