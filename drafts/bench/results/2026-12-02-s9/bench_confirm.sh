#!/usr/bin/env bash
# Session 9: the shipped session-8 drafts against their session-9 continuations (runs/s9-*) on more prompts
# than bench.sh, chain 4, interleaved per prompt against ar (T=0, sharegpt-heldout). bench.sh's 12 prompts
# were mixed (chain 4: MoA -0.04, EAGLE -0.03; tree 6,10,60: +0.02 each): this decides whether to ship.
# One thread, pinned to one core:  taskset -c 1 drafts/bench/results/2026-12-02-s9/bench_confirm.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s9
L=${LIMIT:-30}
NEW="--checkpoint moa-s9=runs/s9-moa --checkpoint eagle-s9=runs/s9-eagle"
moa-bench --threads 1 $NEW --method ar,moa,moa-s9,eagle,eagle-s9 --dataset sharegpt-heldout --temperature 0 \
  --limit $L --max-new-tokens 96 --chain 4 --json $R/shipped-vs-s9-sharegpt-t0-chain4-${L}x96.json
