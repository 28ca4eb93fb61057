#!/usr/bin/env bash
# Session 9: the shipped MoA and EAGLE drafts (session 8) against their session-9 continuations
# (continue_training.sh), interleaved per prompt against ar in one run (T=0, sharegpt-heldout).
# One thread, pinned to one core (the other core ran other work: wall-clock figures are noisy, tau is exact):
#   taskset -c 1 drafts/bench/results/2026-12-02-s9/bench.sh
# LIMIT (prompts, default 12), TREE_LIMIT (prompts for the big tree, default 6).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s9
L=${LIMIT:-12}
NEW="--checkpoint moa-s9=runs/s9-moa --checkpoint eagle-s9=runs/s9-eagle"
moa-bench --threads 1 $NEW --method ar,moa,moa-s9,eagle,eagle-s9 --dataset sharegpt-heldout --temperature 0 \
  --limit $L --max-new-tokens 96 --chain 4 --json $R/shipped-vs-s9-sharegpt-t0-chain4-${L}x96.json
# the tree sized for a GPU verifier (the issue's goal shape): tau only means something here, not tok/s on a CPU
T=${TREE_LIMIT:-6}
moa-bench --threads 1 $NEW --method ar,moa,moa-s9,eagle,eagle-s9 --dataset sharegpt-heldout --temperature 0 \
  --limit $T --max-new-tokens 96 --tree 6,10,60 --json $R/shipped-vs-s9-sharegpt-t0-tree6-10-60-${T}x96.json
