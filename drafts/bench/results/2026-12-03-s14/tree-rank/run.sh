#!/usr/bin/env bash
# Session 14, helper H1: per-node tree scores that see more than q (sibling rank, entropy, top-1 q, parent q).
# The shipped drafts, copied at the start: cp -r drafts/checkpoints/smollm2-135m-instruct /tmp/h1s14-drafts
# (the session-13 drafts of commit ae9c250; moa draft.safetensors md5 b24e2d28, eagle 5d098ec1).
# Core 0, one thread:  taskset -c 0 drafts/bench/results/2026-12-03-s14/tree-rank/run.sh   (PART=tune|report)
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-03-s14/tree-rank
D=${DRAFTS:-/tmp/h1s14-drafts}
CK="--checkpoint moa=$D/moa --checkpoint eagle=$D/eagle"
# The universal per-rank rule (rank_fit.py on both drafts' 24 tuning prompts; ranks 0, 1, 2, 3+)
RANK="slope=1,bias=0,rank_slope=0.9/0.9/1.1/1.15,rank_bias=0/-0.2/0.3/0.45"
if [ "${PART:-tune}" = tune ]; then
# 1. Tuning set: sharegpt-heldout prompts 30..53, 24 x 96, --tree 6,10,60: every generated node of every round with
#    its sibling rank and its distribution's entropy, labelled against ar's answer (decoding with today's rule).
#    13 MB each: kept in /tmp, not committed.
for M in moa eagle; do
  python3 $R/rank_rounds.py $CK --method $M --skip 30 --limit 24 --max-new-tokens 96 --tree 6,10,60 \
    --json /tmp/h1s14-rounds-$M.json > /tmp/h1s14-rounds-$M.txt
done
# 2. Reliability by rank, the universal per-rank fit and the logistic model on the first 12 prompts of each draft,
#    replayed on those and on the other 12; then fitted on all 24 (the rule the report run uses).
ROUNDS="/tmp/h1s14-rounds-moa.json /tmp/h1s14-rounds-eagle.json"
python3 $R/rank_fit.py $ROUNDS --fit-prompts 12 --replay rank_bias=0.1/0 --replay rank_bias=0.2/0 \
  --replay rank_bias=0.3/0 --json $R/fit-half.json > $R/fit-half.txt
python3 $R/rank_fit.py $ROUNDS --replay rank_bias=0.1/0 --replay rank_bias=0.2/0 --json $R/fit-all.json > $R/fit-all.txt
fi
if [ "${PART:-report}" = report ]; then
# 3. The report set (the first 16 prompts x 96), today's rule vs the per-rank rule, interleaved in one moa-bench run
#    per shape, then the paired per-prompt bootstrap (session 10's paired.py). The session ran the two shapes side by
#    side on core 0 (TREES=6,10,60 and TREES=3,4,8).
RK="--checkpoint moa-rank=$D/moa --checkpoint eagle-rank=$D/eagle --tree-scoring moa-rank=$RANK --tree-scoring eagle-rank=$RANK"
for TREE in ${TREES:-6,10,60 3,4,8}; do
  OUTJ=$R/report-tree${TREE//,/-}-16x96.json
  moa-bench --threads 1 $CK $RK --method ar,moa,moa-rank,eagle,eagle-rank --dataset sharegpt-heldout --temperature 0 \
    --limit 16 --max-new-tokens 96 --tree $TREE --json $OUTJ > ${OUTJ%.json}.txt
  python3 drafts/bench/results/2026-12-02-s10/paired.py $OUTJ moa:moa-rank eagle:eagle-rank >> ${OUTJ%.json}.txt
done
fi
