#!/usr/bin/env bash
# Session 10: the CPU default shape (tree 3,4,8; chain 2 beside it) with the session-10 MoA (int8 layers, packed
# target), interleaved against ar in CPU time, sharegpt-heldout 8 x 96, T=0: session 8's cpu_shapes.py (1.34x
# with the session-8 MoA), on core 1:  drafts/bench/results/2026-12-02-s10/cpu-shapes/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s10/cpu-shapes
S=drafts/bench/results/2026-12-02-s8/cpu-shapes
D=runs/s10-cpu/moa-int8
[ -d $D ] || python -m drafts.neural.derive --from drafts/checkpoints/smollm2-135m-instruct/moa --out $D --int8
taskset -c ${CPU:-1} python $S/cpu_shapes.py --checkpoint $D --shapes ${SHAPES:-2 3,4,8} --limit ${LIMIT:-8} \
  --max-new-tokens 96 --json $R/packed-moa-int8-shapes-sharegpt-t0-${LIMIT:-8}x96-s10.json
