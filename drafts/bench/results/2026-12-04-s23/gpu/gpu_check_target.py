"""Load the target where it runs (GPU machine or here), print the device, and compare its converted
fp32 weights with the SHA-256 that gpu_prepare.py recorded here (``moa-bench``'s exact target).

    python gpu_check_target.py MANIFEST DEVICE SUMMARY_JSON   (exit 0 either way: the summary says which)
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import torch


def weights_sha256(model: torch.nn.Module) -> str:
    """SHA-256 over the state dict's names and fp32 bytes, in name order (device-independent)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def main(manifest_path: str, device: str, summary_path: str) -> int:
    from drafts.target.loading import load_target

    manifest = json.loads(Path(manifest_path).read_text())
    t0 = time.perf_counter()
    loaded = load_target("smollm2", torch.device(device), torch.float32)
    load_s = time.perf_counter() - t0
    sha = weights_sha256(loaded.model)
    info = {
        "device": device,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "target_load_s": round(load_s, 1),
        "weights_sha256": sha,
        "weights_match_prepared": sha == manifest["weights_sha256"],
        "fingerprint_match_prepared": loaded.fingerprint.to_dict() == manifest["fingerprint"],
    }
    Path(summary_path).write_text(json.dumps(info, indent=2))
    print("check_target:", json.dumps(info), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
