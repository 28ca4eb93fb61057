#!/usr/bin/env bash
# Session 6: the target with oneDNN-prepacked Linear layers (moa-bench --packed-linear: ar and every
# draft's verify run packed), chain 4, chain 2 and a confidence-stopped chain of up to 6, each run
# interleaved per prompt against ar (T=0, sharegpt-heldout, one thread, pinned to one core; the other
# core ran other work). Needs bench_int8.sh's derived checkpoints.
#   taskset -c 1 drafts/bench/results/2026-12-01-s6/bench_packed.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-01-s6/packed
mkdir -p $R
L=${LIMIT:-12}
C="--checkpoint moa-s6=runs/s6-moa --checkpoint moa-s6-int8=runs/s6-derived/moa-int8 --checkpoint eagle-s6=runs/s6-eagle"
for shape in "--chain 4" "--chain 2" "--chain 6 --confidence 0.15"; do
  name=$(echo "$shape" | tr -d '-' | tr ' ' '_')
  moa-bench --threads 1 --packed-linear $C --method ar,moa-s6,moa-s6-int8,eagle-s6 --dataset sharegpt-heldout \
    --temperature 0 --limit $L --max-new-tokens 96 $shape --json $R/packed-${name}-${L}x96.json
done
