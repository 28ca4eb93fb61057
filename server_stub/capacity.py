"""What this machine can hold: the free memory the server's default limits are derived from.

A server started with no memory flags must not be able to exhaust its machine: the KV budget
defaults to half the memory free on the target's device once the model is loaded (GPU memory on
cuda, system memory on cpu and mps, which share it), and the bytes of requests queued in all
connections default to an eighth of the free system memory (between 256 MiB and 4 GiB). Both
are printed in the server.start log line and can be set explicitly (``--kv-memory-mb``,
``--max-queued-total-mb``).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

MIB = 2**20
KV_SHARE = 0.5  # of the device's free memory, for every session's KV together
QUEUE_SHARE = 0.125  # of the system's free memory, for request frames waiting to be served
QUEUE_FLOOR, QUEUE_CEILING = 256 * MIB, 4096 * MIB


def system_available_bytes() -> int:
    """Memory the system can give without swapping (Linux MemAvailable; else physical pages free)."""
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # macOS lacks SC_AVPHYS_PAGES: a quarter of physical memory
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE")) // 4


def device_available_bytes(device: torch.device | str) -> int:
    """Free memory where the KV caches live."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    return system_available_bytes()  # cpu, and mps (unified memory)


def default_kv_budget_bytes(device: torch.device | str) -> int:
    return max(MIB, int(device_available_bytes(device) * KV_SHARE))


def default_queued_total_bytes() -> int:
    return int(min(QUEUE_CEILING, max(QUEUE_FLOOR, system_available_bytes() * QUEUE_SHARE)))
