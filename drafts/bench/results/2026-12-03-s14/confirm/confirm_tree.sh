#!/usr/bin/env bash
# Session 14: the tree goal (MoA tau >= 3.0 at --tree 6,10,60) on fresh prompts: sharegpt-heldout prompts 16-39
# (skip 16; the first 16 are the standard report set of bench.sh), the shipped (s13) drafts and their s14
# continuations (runs/s14-*), interleaved per prompt against ar, T=0, one thread on core 1.
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-03-s14/confirm
moa-bench --threads 1 --checkpoint moa-s14=runs/s14-moa --checkpoint eagle-s14=runs/s14-eagle \
  --method ar,moa,moa-s14,eagle,eagle-s14 --dataset sharegpt-heldout --temperature 0 --skip 16 --limit 24 \
  --max-new-tokens 96 --tree 6,10,60 --json $R/shipped-vs-s14-tree6-10-60-skip16-24x96.json
python3 drafts/bench/results/2026-12-02-s10/paired.py $R/shipped-vs-s14-tree6-10-60-skip16-24x96.json \
  moa:moa-s14 eagle:eagle-s14 moa-s14:eagle-s14
