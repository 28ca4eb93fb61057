#!/usr/bin/env bash
# Session 8 (H-trees), issue 12: tau of the shipped MoA and EAGLE drafts over GPU-sized trees
# (depth, width, size), interleaved per prompt against ar in one run per shape (T=0, fp32, packed target).
# tau and acceptance by depth are exact (the same tokens whatever the load); tokens/s are not: one thread
# on core 0 of a 2-core AMD EPYC shared with other jobs, and a CPU verifier makes big trees slow anyway.
#   drafts/bench/results/2026-12-02-s8/trees/run.sh            # every shape, both data sets
#   SHAPES="10,10,100" DATASETS=humaneval LIMIT=6 .../run.sh   # a subset
# A JSON already written is kept (the script resumes); python3 .../trees_table.py *.json prints the table.
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s8/trees
L=${LIMIT:-6}
SHAPES=${SHAPES:-"10,10,100 6,10,60 6,10,100 12,10,100 8,16,128 8,10,80"}  # the last three not run in session 8
DATASETS=${DATASETS:-"sharegpt-heldout humaneval"}
for shape in $SHAPES; do
  for d in $DATASETS; do
    out=$R/$d-t0-tree${shape//,/-}-${L}x96.json
    [ -e "$out" ] && continue
    taskset -c 0 moa-bench --threads 1 --method ar,moa,eagle --dataset "$d" --temperature 0 \
      --limit "$L" --max-new-tokens 96 --tree "$shape" --json "$out"
  done
done
