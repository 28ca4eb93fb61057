#!/usr/bin/env bash
# Session 8 (issue 12): small EAGLE-2 trees against chains 2 and 3 on a CPU, with the packed target (the CPU
# float32 default) and the shipped MoA draft in int8 (as the app runs it), ar and every shape interleaved per
# prompt in one run (T=0, sharegpt-heldout, 8 x 96, one thread pinned to core 0; core 1 ran training and
# other sessions' jobs shared core 0: read the CPU-time ratios).
#   RUN=run1 drafts/bench/results/2026-12-02-s8/cpu-shapes/cpu_shapes.sh
#   RUN=run2 SHAPES="2 3 2,2,3 3,2,4 3,2,5 3,4,8" drafts/bench/results/2026-12-02-s8/cpu-shapes/cpu_shapes.sh
#   RUN=run3 SHAPES="2 3,2,4 3,4,8" drafts/bench/results/2026-12-02-s8/cpu-shapes/cpu_shapes.sh
#   RUN=run4-5e7c9d0 DRAFT_DIR=runs/s8-cpu/moa-int8-5e7c9d0 SHAPES="2 3,2,4 3,4,8" .../cpu_shapes.sh
# run4: the MoA shipped in 5e7c9d0 (continued on 1,788 conversations), derived to int8 the same way.
# run2 repeats chains 2 and 3 and the trees that led run1 (fewer shapes: core 0 was shared by ~5 jobs by then).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s8/cpu-shapes
D=${DRAFT_DIR:-runs/s8-cpu/moa-int8}  # run1-3: derived from the shipped MoA before 5e7c9d0
[ -d $D ] || python -m drafts.neural.derive --from drafts/checkpoints/smollm2-135m-instruct/moa --out $D --int8
SHAPES=${SHAPES:-2 3 2,2,3 3,2,4 3,2,5 3,3,6 4,2,6 4,2,8 3,4,8}
# shellcheck disable=SC2086  # SHAPES is a list
taskset -c 0 python $R/cpu_shapes.py --checkpoint $D --shapes $SHAPES --limit ${LIMIT:-8} --max-new-tokens 96 \
  --json $R/packed-moa-int8-shapes-sharegpt-t0-${LIMIT:-8}x96-${RUN:-run1}.json
