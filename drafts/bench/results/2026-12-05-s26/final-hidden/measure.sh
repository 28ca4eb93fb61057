#!/usr/bin/env bash
# Session 26: the two continuations of train.sh against the shipped s24 MoA and EAGLE, interleaved per prompt with ar
# (sharegpt-heldout, T=0, 96 new tokens, one thread a core): the issue's tree 6,10,60 on prompts 0-15 (core 1) and
# 16-39 (core 0), then chain 4 on prompts 0-29 split the same way. Then pooled.py pools them.
#   nohup drafts/bench/results/2026-12-05-s26/final-hidden/measure.sh > runs/s26-measure.log 2>&1 &
set -uo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-05-s26/final-hidden
NEW="--checkpoint moa-base26=runs/s26-moa-base --checkpoint moa-final26=runs/s26-moa-final"
M=ar,moa,moa-base26,moa-final26,eagle
bench() {  # core skip limit shape-args name
  taskset -c $1 moa-bench --threads 1 $NEW --method $M --dataset sharegpt-heldout --temperature 0 --skip $2 --limit $3 \
    --max-new-tokens 96 $4 --json $R/$5.json > $R/$5.txt 2>&1
}
( bench 1 0 16 "--tree 6,10,60" tree-0-16; echo "tree 0-16 done $(date -u +%H:%M)"
  bench 1 0 15 "--chain 4" chain-0-15; echo "chain 0-15 done $(date -u +%H:%M)" ) &
( bench 0 16 24 "--tree 6,10,60" tree-16-40; echo "tree 16-40 done $(date -u +%H:%M)"
  bench 0 15 15 "--chain 4" chain-15-30; echo "chain 15-30 done $(date -u +%H:%M)" ) &
wait
echo "all done $(date -u +%H:%M)"
