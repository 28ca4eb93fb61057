#!/usr/bin/env bash
# Session 9: the shipped session-9 drafts against session 8's (runs/s8-*) on more prompts than bench.sh,
# chain 4, interleaved per prompt against ar (T=0, sharegpt-heldout), to confirm the gain bench.sh saw at ~1.6 SE.
# One thread, pinned to one core:  taskset -c 1 drafts/bench/results/2026-12-02-s9/bench_confirm.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s9
L=${LIMIT:-30}
OLD="--checkpoint moa-s8=runs/s8-moa --checkpoint eagle-s8=runs/s8-eagle"
moa-bench --threads 1 $OLD --method ar,moa-s8,moa,eagle-s8,eagle --dataset sharegpt-heldout --temperature 0 \
  --limit $L --max-new-tokens 96 --chain 4 --json $R/s8-vs-shipped-s9-sharegpt-t0-chain4-${L}x96.json
