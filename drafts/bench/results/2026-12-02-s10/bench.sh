#!/usr/bin/env bash
# Session 10: the shipped MoA and EAGLE drafts (session 8) against their session-10 continuations
# (2026-12-02-s9/next_training.sh: lr 1e-4, TOKENS per kind over the first 2,673 conversations, runs/s10-*),
# interleaved per prompt against ar in one run (T=0, sharegpt-heldout): chain 4 on 30 prompts (decides
# shipping, with paired.py), then the tree sized for a GPU verifier (the issue's goal shape) on 8.
# One thread, pinned to one core:  taskset -c 1 drafts/bench/results/2026-12-02-s10/bench.sh
# PART=chain or PART=tree runs one half (the session ran them side by side, one per core).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=${OUT:-drafts/bench/results/2026-12-02-s10}  # OUT: another session's folder (session 11: OUT=.../2026-12-02-s11 RUN=s11)
L=${LIMIT:-30}
T=${TREE_LIMIT:-8}
V=${RUN:-s10}  # RUN=s11: the checkpoints of next_training.sh (runs/s11-*)
NEW="--checkpoint moa-$V=runs/$V-moa --checkpoint eagle-$V=runs/$V-eagle"
M=ar,moa,moa-$V,eagle,eagle-$V
if [ "${PART:-chain}" = chain ]; then  # PART unset: both halves
moa-bench --threads 1 $NEW --method $M --dataset sharegpt-heldout --temperature 0 \
  --limit $L --max-new-tokens 96 --chain 4 --json $R/shipped-vs-$V-sharegpt-t0-chain4-${L}x96.json
python3 drafts/bench/results/2026-12-02-s10/paired.py $R/shipped-vs-$V-sharegpt-t0-chain4-${L}x96.json moa:moa-$V eagle:eagle-$V
fi
if [ "${PART:-tree}" = tree ]; then
moa-bench --threads 1 $NEW --method $M --dataset sharegpt-heldout --temperature 0 \
  --limit $T --max-new-tokens 96 --tree 6,10,60 --json $R/shipped-vs-$V-sharegpt-t0-tree6-10-60-${T}x96.json
python3 drafts/bench/results/2026-12-02-s10/paired.py $R/shipped-vs-$V-sharegpt-t0-tree6-10-60-${T}x96.json moa:moa-$V eagle:eagle-$V moa-$V:eagle-$V
fi
