"""Session 23: do the H200's greedy answers equal this CPU's? The first reply of N greedy GPU conversations,
decoded again here with the same module (fp32, the same prompt rendering), compared as text.

    python drafts/bench/results/2026-12-04-s23/gpu-fidelity/gpu_vs_cpu.py [N]   (lines 13,413-17,189 are the GPU's)
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT))

from drafts.data.batch_decode import Row, decode_batch  # noqa: E402
from drafts.data.sharegpt import load_sharegpt  # noqa: E402
from drafts.data.target_answers import AnswerConfig, _budget, _new_job, _prepare  # noqa: E402
from drafts.target.loading import load_target  # noqa: E402
from drafts.target.runner import TargetRunner  # noqa: E402

GPU_LINES = (13_413, 17_189)


def main(n: int) -> int:
    torch.set_num_threads(1)
    with gzip.open(ROOT / "drafts/data/generated/smollm2-answers.jsonl.gz", "rt", encoding="utf-8") as file:
        lines = [line for line in file if line.strip()][GPU_LINES[0] - 1 : GPU_LINES[1]]
    greedy = [json.loads(line) for line in lines if json.loads(line)["temperature"] == 0.0][:n]
    convs = {c.id: c for c in load_sharegpt("train")}
    loaded = load_target("smollm2", torch.device("cpu"), torch.float32)
    tok, cfg = loaded.tokenizer, AnswerConfig()
    rows, want = [], []
    for record in greedy:
        job = _new_job(convs[record["id"]], cfg)
        assert _prepare(job, tok, cfg)
        rows.append(Row(job.prompt, _budget(job, cfg)))
        want.append(next(t["value"] for t in record["conversations"] if t["from"] == "gpt"))
    stop = set(TargetRunner(loaded).stop_ids)
    replies = decode_batch(loaded.model, rows, stop, pad_id=tok.pad_token_id or 0)
    same = 0
    for record, reply, text in zip(greedy, replies, want, strict=True):
        got = tok.decode(reply, skip_special_tokens=True)
        common = next((i for i, (a, b) in enumerate(zip(got, text, strict=False)) if a != b), min(len(got), len(text)))
        same += got == text
        print(f"{record['id']}: {'same' if got == text else f'differs at char {common} of {len(text)}'}")
    print(f"gpu_vs_cpu: {same} of {len(greedy)} greedy first replies identical as text")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 16))
