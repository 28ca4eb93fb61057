"""Where a benchmark ran: the target, the device and the software, recorded in every result's config."""

from __future__ import annotations

import os
import platform
import time
from typing import Any

import torch

from drafts.target.runner import TargetRunner


def run_environment(runner: TargetRunner) -> dict[str, Any]:
    return {
        "target": runner.fingerprint.to_dict(),
        "device": str(runner.device),
        "dtype": str(runner.dtype).removeprefix("torch."),
        "torch_threads": torch.get_num_threads(),
        # PASSIVE makes OpenMP threads sleep between parallel regions: small ops get slower
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
        "torch": torch.__version__,
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def cpu_model() -> str:
    """The CPU's model name (timings differ across CPUs: compare ratios within one run)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
