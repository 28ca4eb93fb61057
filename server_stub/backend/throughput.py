"""Measure what batching buys: verifications per second, one job per forward vs B jobs per forward.

    python -m server_stub.backend.throughput --target smollm2 --batch 4 --prefix 128 --gamma 4

Each of B sessions holds ``--prefix`` committed tokens and verifies a chain of ``--gamma``
drafted tokens per round (then rewinds, so every round sees the same context). *Sequential*
verifies the B jobs one per ``verify`` call (B forwards); *batched* verifies them in one call
(one forward). The two alternate round by round and the median round counts, because the
load on a shared machine drifts. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch

from drafts.protocol import Needs
from drafts.sampling import SamplingConfig
from drafts.target.device import resolve_device
from drafts.target.loading import load_target
from drafts.target.packed_linear import LINEAR_CHOICES
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree
from server_stub.backend.base import VerifyJob
from server_stub.backend.transformers_backend import TransformersBackend, TransformersBackendConfig


def measure(runner: TargetRunner, batch: int, prefix: int, gamma: int, rounds: int) -> dict[str, float]:
    backend = TransformersBackend(runner, TransformersBackendConfig(max_batch=batch))
    generator = torch.Generator().manual_seed(0)
    vocab = int(runner.config.vocab_size)
    jobs = []
    for i in range(batch):
        backend.open(f"s{i}", Needs())
        backend.prefill(f"s{i}", torch.randint(0, vocab, (prefix,), generator=generator).tolist())
        chain = DraftTree.chain(torch.randint(0, vocab, (gamma,), generator=generator).tolist())
        jobs.append(VerifyJob(f"s{i}", 1, chain, SamplingConfig()))

    def sequential() -> None:
        for job in jobs:
            backend.verify([job])
            backend.rewind(job.session_id, prefix)

    def batched() -> None:
        backend.verify(jobs)
        for job in jobs:
            backend.rewind(job.session_id, prefix)

    one, many = _rates([sequential, batched], batch, rounds)
    return {
        "batch": batch,
        "sequential_verifications_per_s": one,
        "batched_verifications_per_s": many,
        "gain": many / one,
    }


def _rates(steps: list[Callable[[], None]], jobs: int, rounds: int) -> list[float]:
    """Median verifications/s of each step, the steps interleaved round by round (the machine's load drifts)."""
    for step in steps:
        step()  # warm-up
    seconds: list[list[float]] = [[] for _ in steps]
    for _ in range(rounds):
        for step, times in zip(steps, seconds, strict=True):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
    return [jobs / statistics.median(times) for times in seconds]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server_stub.backend.throughput", description=__doc__)
    parser.add_argument("--target", default=None, help="target to load (default: the bundled SmolLM2)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, nargs="+", default=[4], help="sessions verified per forward")
    parser.add_argument("--prefix", type=int, default=128, help="committed tokens per session")
    parser.add_argument("--gamma", type=int, default=4, help="drafted tokens per chain")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--linear", default="auto", choices=LINEAR_CHOICES, help="as moa-server --linear")
    args = parser.parse_args(argv)
    device = resolve_device(args.device)
    runner = TargetRunner(load_target(args.target, device, torch.float32, args.linear))
    results = [measure(runner, b, args.prefix, args.gamma, args.rounds) for b in args.batch]
    print(
        json.dumps(
            {
                "target": runner.fingerprint.name,
                "device": str(device),
                "linear": runner.linear,
                "threads": torch.get_num_threads(),
                "prefix": args.prefix,
                "gamma": args.gamma,
                "results": results,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
