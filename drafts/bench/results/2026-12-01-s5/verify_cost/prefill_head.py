"""Prefill of a ~200-token prompt for a drafter that reads hidden states: LM head over every row or the last.

    OMP_NUM_THREADS=1 taskset -c 0 python3 drafts/bench/results/2026-12-01-s5/verify_cost/prefill_head.py
Interleaved, median CPU and wall ms; also checks the last row's logits against the autoregressive path's
prefill (``last_only=True``, no hidden states).
"""

from __future__ import annotations

import statistics
import time

import torch

from drafts.target.activations import NOTHING, ActivationRequest
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner


def main() -> None:
    torch.set_num_threads(1)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    prompt = [(17 * i) % 40000 + 100 for i in range(200)]
    needs = ActivationRequest(hidden_layers=(2, runner.num_layers // 2, runner.num_layers))
    times: dict[str, list[tuple[float, float]]] = {"all rows": [], "last row": [], "ar": []}
    last: dict[str, torch.Tensor] = {}
    for _ in range(8):
        for name, request, last_only in (("all rows", needs, False), ("last row", needs, True), ("ar", NOTHING, True)):
            session = runner.new_session()
            w, c = time.perf_counter(), time.process_time()
            logits = runner.extend(session, prompt, request, last_only=last_only)
            runner.commit(session, None, request)
            times[name].append(((time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3))
            last[name] = logits[-1]
    for name, v in times.items():
        wall, cpu = statistics.median(t[0] for t in v), statistics.median(t[1] for t in v)
        print(f"{name:9} wall {wall:7.1f} ms  cpu {cpu:7.1f} ms")
    print("last-row logits, all rows == ar:", torch.equal(last["all rows"], last["ar"]))
    print("last-row logits, last row == ar:", torch.equal(last["last row"], last["ar"]))


if __name__ == "__main__":
    main()
