"""What speculative streaming costs and gives on the verifier's side (SmolLM2-135M, fp32, this CPU), no sockets.

Two measurements, each interleaved within one run (the core is shared: compare ratios, not ms):

    step      one backend step (``TransformersBackend.verify``: the target over [root, nodes], the
              acceptance, the commit, the final-layer rows) of the root alone vs the root and a
              chain of 1 / 4 / 8 proposed nodes (the target's own tokens: all accepted), at the
              chat prompt's real context, rewound after each; median CPU ms of this thread
              (``time.thread_time``) and wall ms, and the ratio to the root alone
    stream    ``server_stub.generation.stream_generation`` itself (the inference worker, the
              proposal box, the session) decoding NEW tokens after the prompt, plain vs proposing,
              the proposals coming from an oracle client (the target's own next ``k`` tokens,
              drafted below each part's newest token as soon as the part is out) that reach the
              box ``lag`` ms after the part: 0 (the server's ideal: before the next step starts),
              30 or 80 (a link's loop: the part down, the draft, the proposal up; 4g's is ~60 ms
              plus the draft's time); a lag the server spends stepping makes the proposal stale by
              the tokens of those steps, walked off its top (read it against wall_ms_per_step); steps
              (parts) per token, and tokens per second (wall, and of this process's CPU time,
              which the other jobs on a shared core do not count) against plain's

The oracle is a perfect draft: the figures bound what a real draft gets (a real one is accepted
less, and costs the client its draft time). Every run's tokens are checked equal to plain's (T=0).

    taskset -c 0 env OMP_NUM_THREADS=1 python \\
        drafts/bench/results/2026-12-02-s9/stream/server/stream_server_cost.py --json OUT.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from drafts.bench.environment import run_environment
from drafts.protocol import Capabilities, Generate, Generated, Needs, Propose
from drafts.sampling import SamplingConfig
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.tree import DraftTree
from server_stub.backend.base import VerifyJob
from server_stub.backend.transformers_backend import TransformersBackend, TransformersBackendConfig
from server_stub.cancels import CancelToken
from server_stub.generation import stream_generation
from server_stub.proposals import ProposalBox
from server_stub.sessions import SessionRecord
from server_stub.worker import InferenceWorker

CHAT = [{"role": "user", "content": "Write a short story about a robot who learns to paint."}]
NEEDS = Needs(hidden_layers=(30,))  # a draft that reads the final layer: the rows every part carries
GREEDY = SamplingConfig()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--step-reps", type=int, default=40)
    parser.add_argument("--stream-reps", type=int, default=3)
    parser.add_argument("--new", type=int, default=64)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32, linear="auto"))
    backend = TransformersBackend(runner, TransformersBackendConfig())
    prompt = list(runner.format_chat(CHAT))
    reference = asyncio.run(_reference(backend, prompt, args.new))
    result: dict[str, Any] = {
        "command": " ".join(["stream_server_cost.py", *(argv if argv is not None else sys.argv[1:])]),
        "environment": run_environment(runner),
        "prompt_tokens": len(prompt),
        "step": measure_steps(backend, prompt, reference, args.step_reps),
        "stream": asyncio.run(measure_streams(backend, prompt, reference, args.stream_reps)),
    }
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"step": result["step"]["summary"], "stream": result["stream"]["summary"]}, indent=2))
    return 0


# -- one step's cost -----------------------------------------------------------------------------


def measure_steps(backend: TransformersBackend, prompt: list[int], reference: list[int], reps: int) -> dict[str, Any]:
    """Median CPU and wall ms of one step with 0 / 1 / 4 / 8 proposed nodes, interleaved in random order."""
    backend.open("step", NEEDS)
    backend.prefill("step", prompt[:-1])
    length = len(prompt) - 1
    sizes = [0, 1, 4, 8]
    cpu: dict[int, list[float]] = {n: [] for n in sizes}
    wall: dict[int, list[float]] = {n: [] for n in sizes}
    order = random.Random(0)
    for rep in range(reps + 2):  # the first two rounds warm up
        for n in order.sample(sizes, len(sizes)):
            job = VerifyJob("step", prompt[-1], DraftTree.chain(reference[:n]), GREEDY)
            c0, w0 = time.thread_time(), time.perf_counter()
            [outcome] = backend.verify([job])
            c1, w1 = time.thread_time(), time.perf_counter()
            assert not isinstance(outcome, Exception) and len(outcome.acceptance.path) == n, outcome
            backend.rewind("step", length)
            if rep >= 2:
                cpu[n].append((c1 - c0) * 1e3)
                wall[n].append((w1 - w0) * 1e3)
    backend.close("step")
    summary = {
        f"nodes_{n}": {
            "cpu_ms": round(statistics.median(cpu[n]), 2),
            "wall_ms": round(statistics.median(wall[n]), 2),
            "cpu_vs_root_alone": round(statistics.median(cpu[n]) / statistics.median(cpu[0]), 3),
            "tokens": n + 1,
        }
        for n in sizes
    }
    return {"reps": reps, "context": length, "summary": summary, "cpu_ms": cpu, "wall_ms": wall}


# -- whole streams ---------------------------------------------------------------------------------


async def _reference(backend: TransformersBackend, prompt: list[int], new: int) -> list[int]:
    """Plain streaming's tokens: what every other run must reproduce."""
    tokens, _ = await _stream(backend, prompt, new, None)
    return tokens


async def measure_streams(
    backend: TransformersBackend, prompt: list[int], reference: list[int], reps: int
) -> dict[str, Any]:
    """Plain and proposing streams, interleaved rep by rep: parts per token and wall tokens/s."""
    methods: list[tuple[str, tuple[int, float] | None]] = [("plain", None)]
    methods += [(f"oracle_k{k}_lag{lag:g}ms", (k, lag)) for lag in (0.0, 30.0, 80.0) for k in (1, 2, 4, 8)]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in methods}
    order = random.Random(1)
    for _ in range(reps):
        for name, oracle in order.sample(methods, len(methods)):
            started, cpu_started = time.perf_counter(), time.process_time()
            tokens, parts = await _stream(backend, prompt, len(reference), oracle and (reference, *oracle))
            seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
            runs[name].append(
                {
                    "identical": tokens == reference,
                    "parts": len(parts),
                    "drafted": sum(p.drafted for p in parts),
                    "tokens_per_s": round(len(tokens) / seconds, 2),
                    "tokens_per_cpu_s": round(len(tokens) / cpu_seconds, 2),  # this process's CPU, all threads
                    "wall_ms_per_step": round(seconds * 1e3 / len(parts), 1),  # to read a lag against
                }
            )
    summary = {name: _summary(rs, runs["plain"], len(reference)) for name, rs in runs.items()}
    return {"reps": reps, "new_tokens": len(reference), "summary": summary, "runs": runs}


def _summary(rs: list[dict[str, Any]], plain: list[dict[str, Any]], new: int) -> dict[str, Any]:
    def median(key: str, of: list[dict[str, Any]]) -> float:
        return float(statistics.median(r[key] for r in of))

    return {
        "identical": all(r["identical"] for r in rs),
        "parts_per_token": round(median("parts", rs) / new, 3),
        "tokens_per_s": median("tokens_per_s", rs),
        "vs_plain": round(median("tokens_per_s", rs) / median("tokens_per_s", plain), 3),
        "tokens_per_cpu_s": median("tokens_per_cpu_s", rs),
        "cpu_vs_plain": round(median("tokens_per_cpu_s", rs) / median("tokens_per_cpu_s", plain), 3),
        "wall_ms_per_step": median("wall_ms_per_step", rs),
    }


async def _stream(
    backend: TransformersBackend, prompt: list[int], new: int, oracle: tuple[list[int], int, float] | None
) -> tuple[list[int], list[Generated]]:
    """One Generate through the real generation loop and worker; ``oracle`` = (tokens, k, lag ms) proposes."""
    worker = InferenceWorker(backend)
    worker.start()
    session = f"stream-{time.perf_counter_ns()}"
    await worker.call(lambda b: b.open(session, NEEDS))
    await worker.call(lambda b: b.prefill(session, prompt[:-1]))
    root = len(prompt) - 1
    request = Generate(1, prompt[-1], new, torch.empty(0, dtype=torch.int64), GREEDY, propose=oracle is not None)
    box = None if oracle is None else ProposalBox()
    parts: list[Generated] = []
    send = _oracle_client(box, oracle, root, parts)
    if box is not None and oracle is not None:
        box.put(_proposal(oracle, root, root))  # the first draft, from the root: there before the first step
    caps = Capabilities(backend.max_context, 64, 2**26, "float16", False, "cpu", True)
    record = SessionRecord(session, NEEDS, None)
    reply = await stream_generation(request, record, worker, send, caps, CancelToken(), box)
    assert isinstance(reply, Generated), reply
    parts.append(reply)
    await worker.call(lambda b: b.close(session))
    await worker.stop()
    return [t for p in parts for t in p.tokens.tolist()], parts


def _oracle_client(
    box: ProposalBox | None, oracle: tuple[list[int], int, float] | None, root: int, parts: list[Generated]
) -> Callable[[Generated], Any]:
    async def send(part: Generated) -> None:
        parts.append(part)
        if box is not None and oracle is not None:
            proposal = _proposal(oracle, root, part.committed)
            if oracle[2] > 0:
                asyncio.get_running_loop().call_later(oracle[2] / 1e3, box.put, proposal)
            else:  # the server's ideal: the draft is there before the next step starts
                box.put(proposal)

    return send


def _proposal(oracle: tuple[list[int], int, float], root: int, base: int) -> Propose:
    """The target's own next ``k`` tokens below the token at session index ``base``."""
    tokens, k, _ = oracle
    start = base - root
    return Propose.of(1, base, DraftTree.chain(tokens[start : start + k]))


if __name__ == "__main__":
    raise SystemExit(main())
