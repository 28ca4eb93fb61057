#!/usr/bin/env bash
# Session 6: int8 dynamic quantization of the draft (python -m drafts.neural.derive --int8) against
# fp32, for the session-6 MoA and EAGLE, interleaved per prompt against ar (T=0, sharegpt-heldout,
# chain 4, one thread, pinned to one core; the other core ran other work):
#   taskset -c 1 drafts/bench/results/2026-12-01-s6/bench_int8.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-01-s6
for k in moa eagle; do
  [ -d runs/s6-derived/$k-int8 ] || python -m drafts.neural.derive --from runs/s6-$k --out runs/s6-derived/$k-int8 --int8
done
L=${LIMIT:-12}
moa-bench --threads 1 --checkpoint moa-s6=runs/s6-moa --checkpoint eagle-s6=runs/s6-eagle \
  --checkpoint moa-s6-int8=runs/s6-derived/moa-int8 --checkpoint eagle-s6-int8=runs/s6-derived/eagle-int8 \
  --method ar,moa-s6,moa-s6-int8,eagle-s6,eagle-s6-int8 --dataset sharegpt-heldout --temperature 0 \
  --limit $L --max-new-tokens 96 --chain 4 --json $R/int8-vs-fp32-sharegpt-t0-chain4-${L}x96.json
