"""Session 23: the CUDA paths of the run, on the tiny random target of the tests, in seconds (device call 1).

moa-train and target_answers never ran on a GPU before; this runs what device_run.sh will (the
trainer of both drafts with a checkpoint and a timed budget, batched greedy and sampled decoding
with a generator on the device) on the tests' tiny Llama, so a device-placement bug shows in call 1,
before the GGUF's last part travels.  python gpu_smoke.py DEVICE   (exit 1 on a failure)
"""

from __future__ import annotations

import functools
import importlib
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[5]
sys.path.insert(0, str(ROOT))

from drafts.data.batch_decode import Row, decode_batch  # noqa: E402
from drafts.target.runner import TargetRunner  # noqa: E402
from drafts.training.trainer import TrainConfig, Trainer  # noqa: E402

# the tests' helpers, imported by name: mypy checks drafts/, not the tests these lead into
ChatTokenizer = importlib.import_module("tests.chat_tokenizer").ChatTokenizer
conversations = importlib.import_module("tests.drafts.training.conversations").conversations
_tiny = importlib.import_module("tests.tiny_drafts")
random_draft, tiny_llama, tiny_target_runner = _tiny.random_draft, _tiny.tiny_llama, _tiny.tiny_target_runner


def main(device_name: str) -> int:
    device = torch.device(device_name)
    runner = tiny_target_runner(tiny_llama(seed=0).to(device), ChatTokenizer())
    failures = 0
    for kind in ("moa", "eagle"):
        for batch in (1, 3):  # session 24: moa-train --batch too
            failures += _check(f"train {kind} batch {batch}", functools.partial(_train, kind, runner, device, batch))
    failures += _check("decode", lambda: _decode(runner.model, device))
    print(f"gpu_smoke: {'ok' if failures == 0 else f'{failures} FAILED'} on {device_name}", flush=True)
    return 1 if failures else 0


def _train(kind: str, runner: TargetRunner, device: torch.device, batch: int) -> str:
    cfg = TrainConfig(
        tokens=400, accum=2, batch=batch, lr=3e-3, warmup_steps=2, checkpoint_every=2, seed=3, max_minutes=0.5
    )
    with tempfile.TemporaryDirectory() as out:
        state = Trainer(random_draft(kind, runner).to(device), runner, conversations(), cfg, Path(out)).run({})
        saved = sorted(p.name for p in Path(out).iterdir())
    return f"{state.step} steps, {state.tokens_seen} tokens, loss {state.last.get('loss', float('nan')):.3f}, {saved}"


def _decode(model: torch.nn.Module, device: torch.device) -> str:
    rows = [Row(prompt=[1, 5, 7, 9], max_new_tokens=6), Row(prompt=[3, 4], max_new_tokens=6, temperature=1.0)]
    out = decode_batch(model, rows, stop_ids={0}, pad_id=0, generator=torch.Generator(device=device).manual_seed(0))
    return f"{[len(r) for r in out]} tokens"


def _check(name: str, run: Callable[[], str]) -> int:
    t0 = time.perf_counter()
    try:
        print(f"gpu_smoke: {name}: {run()} ({time.perf_counter() - t0:.1f}s)", flush=True)
        return 0
    except Exception:  # noqa: BLE001  (a smoke test reports every failure, then the next check)
        print(f"gpu_smoke: {name}: FAILED", flush=True)
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "cuda"))
