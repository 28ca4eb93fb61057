#!/usr/bin/env bash
# Session 5: the shipped MoA and EAGLE drafts against their continuations on the exact target's own
# answers (continue_training.sh), interleaved per prompt against ar in one run. One thread, pinned
# to core 1 (the other core was in use by other work; wall-clock speedups are noisy, tau is exact):
#   taskset -c 1 drafts/bench/results/2026-12-01-s5/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-01-s5
moa-bench --threads 1 --checkpoint moa-new=runs/s5-moa --checkpoint eagle-new=runs/s5-eagle \
  --method ar,moa,moa-new,eagle,eagle-new --dataset sharegpt-heldout --temperature 0 \
  --limit ${LIMIT:-12} --max-new-tokens 96 --chain 4 --json $R/shipped-vs-s5-sharegpt-t0-chain4-${LIMIT:-12}x96.json
# the same prompts with an EAGLE-2 dynamic tree (depth 4, top 4, 16 nodes); eagle-new left out (it lost at chain 4)
moa-bench --threads 1 --checkpoint moa-new=runs/s5-moa \
  --method ar,moa,moa-new,eagle --dataset sharegpt-heldout --temperature 0 \
  --limit ${LIMIT:-12} --max-new-tokens 96 --tree 4,4,16 --json $R/shipped-vs-s5-sharegpt-t0-tree4-4-16-${LIMIT:-12}x96.json
