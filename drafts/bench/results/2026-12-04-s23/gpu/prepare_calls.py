"""Session 23 (session 7's gpu_prepare.py, adapted): what the GPU machine needs, written into ``.gpu/`` (ignored).

The tree that travels with every ``run`` call is capped at 64 MiB; main's tracked tree is ~200 MiB
(every session's candidate drafts), so the calls are made from the branch ``device_branch.sh``
checks out: the source alone (~2 MiB). What the run needs besides travels as carry, one folder
``.gpu/callN`` per call: call 1 the wheels the device lacks (gguf, platformdirs), the shipped
drafts to start from (``init-{moa,eagle}.*``), the committed answers (``answers-old.jsonl.gz``: the
ones trained on), the answers not trained on yet (``answers-new.jsonl.gz``: committed lines from
``--new-from`` on, and whatever ``runs/answers.jsonl`` holds past the committed ones), and the
prompts: every ShareGPT **train** conversation not answered in ``runs/answers*.jsonl``, in the CPU
generator's seeded order, never a held-out one (checked here); then the target's GGUF (94 MiB) in
parts. The manifest holds the GGUF's SHA-256 and a SHA-256 of the converted fp32 weights as loaded
here (``moa-bench``'s target), which session 7's ``gpu_check_target.py`` recomputes there.

    python drafts/bench/results/2026-12-04-s23/gpu/prepare_calls.py --new-from 12542 [--budget-mib M]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "drafts/bench/results/2026-12-02-s7/gpu"))  # session 7's scripts

from gpu_prepare import split, target_checks  # noqa: E402  (session 7's: the GGUF in parts, its checksum)

from drafts.data.sharegpt import load_sharegpt  # noqa: E402
from drafts.data.target_answers import shuffled, write_prompts  # noqa: E402
from drafts.locations import smollm2_gguf  # noqa: E402

SHIPPED_ANSWERS = ROOT / "drafts/data/generated/smollm2-answers.jsonl.gz"
SHIPPED_DRAFTS = ROOT / "drafts/checkpoints/smollm2-135m-instruct"
GPU_SCRIPTS = ("drafts/bench/results/2026-12-04-s23/gpu", "drafts/bench/results/2026-12-02-s7/gpu")  # they travel
LOCAL_ANSWERS = (ROOT / "runs/answers.jsonl", ROOT / "runs/answers-b.jsonl")  # the CPU generators' files
# The device lacks gguf and platformdirs, and its transformers (5.17) takes the KV cache as past_key_values and
# silently ignores the cache= this code passes (the rehearsal's answers were garbage, MoA training failed):
# this machine's transformers and the hub client it needs travel too, with their own needs at this machine's versions.
WHEELS = (
    "gguf==0.19.0", "platformdirs==4.14.9", "transformers==5.25.0", "huggingface_hub==2.4.0", "httpx2==2.16.2",
    "httpcore2==2.16.2", "truststore==0.10.5", "h11==0.16.0", "anyio==4.16.0", "idna==3.20", "click==8.5.1",
    "hf_xet==1.8.0", "kernels==0.19.1", "tomlkit==0.15.3",
)  # fmt: skip
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
MiB = 2**20


def main() -> int:
    p = calls_parser(__doc__)
    p.add_argument("--new-from", type=int, required=True, help="the first committed answer line not trained on yet")
    p.add_argument("--seed", type=int, default=0, help="target_answers --seed (the order)")
    args = p.parse_args()
    staging = fresh_staging(args.out)
    prompts = write_train_prompts(staging / "prompts.jsonl.gz", args.seed)
    manifest: dict[str, Any] = {"prompts": prompts, "answers": write_answers(staging, args.new_from)}
    return pack(args.out, staging, manifest, args.budget_mib)


def calls_parser(doc: str | None) -> argparse.ArgumentParser:
    """--out (the calls' folder) and --budget-mib, every preparation's options."""
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--out", type=Path, default=ROOT / ".gpu")
    p.add_argument("--budget-mib", type=float, default=62.0, help="what one call may carry with the tree")
    return p


def fresh_staging(out: Path) -> Path:
    """``out`` emptied, and its staging folder (call 1's extras before ``pack``) made."""
    shutil.rmtree(out, ignore_errors=True)
    staging = out / "staging"
    staging.mkdir(parents=True)
    return staging


def pack(out: Path, staging: Path, manifest: dict[str, Any], budget_mib: float) -> int:
    """``staging``'s data with the shipped drafts, the wheels and the GGUF in parts, into ``out``/callN;
    the manifest (checksums, parts) into the last call's folder."""
    copy_drafts(staging)
    fetch_wheels(staging)
    gguf = smollm2_gguf()
    manifest |= target_checks(gguf)
    if tree_bytes() > 8 * MiB:
        raise SystemExit(
            f"the device branch's tree would be {tree_bytes() / MiB:.0f} MiB: check device_branch.sh's rule"
        )
    free = budget_mib * MiB - tree_bytes()
    extras = sum(f.stat().st_size for f in staging.iterdir()) + 4096
    calls = math.ceil((gguf.stat().st_size + extras) / free)
    if free <= extras or calls > 6:
        raise SystemExit(f"the tree leaves {free / MiB:.1f} MiB per call: too little; shrink the tracked tree")
    parts = split(gguf, calls, first_room=free - extras, args_out=out)
    for f in staging.iterdir():
        f.rename(out / "call1" / f.name)
    staging.rmdir()
    manifest["parts"] = parts
    (out / f"call{calls}" / "manifest.json").write_text(json.dumps(manifest, indent=2))
    print(json.dumps({"calls": calls, "tree_mib": round(tree_bytes() / MiB, 1), "parts": parts}, indent=1))
    return 0


def write_train_prompts(path: Path, seed: int) -> dict[str, object]:
    held = {conv.id for conv in load_sharegpt("heldout")}
    answered = {str(json.loads(line)["id"]) for line in _all_answer_lines()}
    chosen = [c for c in shuffled(load_sharegpt("train"), seed) if c.id not in answered]
    assert not held & {c.id for c in chosen}, "a held-out conversation among the prompts"
    plain = path.with_suffix("")
    count = write_prompts(plain, chosen)
    gzip_and_remove(plain, path)
    return {"conversations": count, "seed": seed, "skipped_answered": len(answered), "heldout_checked": len(held)}


def write_answers(into: Path, new_from: int) -> dict[str, int]:
    """answers-old.jsonl.gz: committed lines before ``new_from``; answers-new.jsonl.gz: the rest, ids once."""
    with gzip.open(SHIPPED_ANSWERS, "rt", encoding="utf-8") as file:
        committed = [line for line in file if line.strip()]
    seen = {str(json.loads(line)["id"]) for line in committed}
    extra = []
    for line in _local_lines():
        key = str(json.loads(line)["id"])
        if key not in seen:
            seen.add(key)
            extra.append(line)
    old, new = committed[: new_from - 1], committed[new_from - 1 :] + extra
    for name, lines in (("answers-old.jsonl.gz", old), ("answers-new.jsonl.gz", new)):
        with gzip.open(into / name, "wt", encoding="utf-8", compresslevel=9) as out:
            out.writelines(line if line.endswith("\n") else line + "\n" for line in lines)
    return {"old": len(old), "new_committed": len(committed) - len(old), "new_uncommitted": len(extra)}


def copy_drafts(into: Path) -> None:
    for kind in ("moa", "eagle"):
        for file in sorted((SHIPPED_DRAFTS / kind).iterdir()):
            if file.is_file():
                shutil.copyfile(file, into / f"init-{kind}.{file.name}")


def _local_lines() -> list[str]:
    return [
        line for path in LOCAL_ANSWERS if path.is_file() for line in path.read_text("utf-8").split("\n") if line.strip()
    ]


def _all_answer_lines() -> list[str]:
    with gzip.open(SHIPPED_ANSWERS, "rt", encoding="utf-8") as file:
        return [line for line in file if line.strip()] + _local_lines()


def gzip_and_remove(plain: Path, path: Path) -> None:
    with plain.open("rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()


def fetch_wheels(into: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version",
         "3.12", "--implementation", "cp", *(a for p in PLATFORMS for a in ("--platform", p)), "-d", str(into),
         *WHEELS],
        check=True,
    )  # fmt: skip


def tree_bytes() -> int:
    """What will travel besides carry: the device branch's files (device_branch.sh's rule), untracked ones too."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    names = [name for name in out.decode().split("\0") if name and not _dropped(name)]
    return sum((ROOT / name).stat().st_size for name in names if (ROOT / name).is_file())


def _dropped(name: str) -> bool:
    folder, _, _ = name.rpartition("/")
    if folder in GPU_SCRIPTS:  # the scripts only: the run's results beside them stay here
        return False
    generated = name.startswith("drafts/data/generated/") and name.endswith(".gz")
    return name.startswith(("drafts/bench/results/", "drafts/checkpoints/")) or generated


if __name__ == "__main__":
    sys.exit(main())
