#!/usr/bin/env bash
# Session 14: the tree goal (MoA tau >= 3.0 at --tree 6,10,60) on fresh prompts: sharegpt-heldout prompts 16-39
# (skip 16; the first 16 are the standard report set of bench.sh), the shipped (s13) drafts and their s14
# continuations (runs/s14-*), interleaved per prompt against ar, T=0, one thread on core 1.
# Session 15: OUT=drafts/bench/results/2026-12-03-s15/confirm RUN=s15 (the s15 continuations against the s14 drafts).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=${OUT:-drafts/bench/results/2026-12-03-s14/confirm}
V=${RUN:-s14}
mkdir -p $R
moa-bench --threads 1 --checkpoint moa-$V=runs/$V-moa --checkpoint eagle-$V=runs/$V-eagle \
  --method ar,moa,moa-$V,eagle,eagle-$V --dataset sharegpt-heldout --temperature 0 --skip 16 --limit 24 \
  --max-new-tokens 96 --tree 6,10,60 --json $R/shipped-vs-$V-tree6-10-60-skip16-24x96.json
python3 drafts/bench/results/2026-12-02-s10/paired.py $R/shipped-vs-$V-tree6-10-60-skip16-24x96.json \
  moa:moa-$V eagle:eagle-$V moa-$V:eagle-$V
