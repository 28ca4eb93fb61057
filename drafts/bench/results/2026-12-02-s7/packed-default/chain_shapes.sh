#!/usr/bin/env bash
# Session 7: the CPU default shape with the packed target (the new CPU default): ar and the shipped MoA
# (int8, as the app runs it) at chain 2, 3 and 4, interleaved per prompt in one run (T=0,
# sharegpt-heldout, 8 x 96, one thread pinned to core 0; core 1 ran training: read the ratios).
#   RUN=run3 drafts/bench/results/2026-12-02-s7/packed-default/chain_shapes.sh
# run1 overlapped this session's test runs on core 0; run2 and run3 (with CPU seconds) other sessions' jobs only.
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s7/packed-default
D=runs/s7-packed-default/moa-int8
[ -d $D ] || python -m drafts.neural.derive --from drafts/checkpoints/smollm2-135m-instruct/moa --out $D --int8
taskset -c 0 python $R/chain_shapes.py --checkpoint $D --chains 2,3,4 --limit ${LIMIT:-8} --max-new-tokens 96 \
  --json $R/packed-moa-int8-chain2-3-4-sharegpt-t0-${LIMIT:-8}x96-${RUN:-run1}.json
