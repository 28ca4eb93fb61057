#!/usr/bin/env bash
# Session 13, helper H2: calibrated node scores for EAGLE-2 trees (drafts.neural.tree_search.TreeScoring).
# The shipped (session-11) drafts, copied at the start: cp -r drafts/checkpoints/smollm2-135m-instruct /tmp/h2-drafts
# Core 0, one thread:  taskset -c 0 drafts/bench/results/2026-12-03-s13/tree-scoring/run.sh   (PART=tune|report)
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-03-s13/tree-scoring
D=${DRAFTS:-/tmp/h2-drafts}
CK="--checkpoint moa=$D/moa --checkpoint eagle=$D/eagle"
if [ "${PART:-tune}" = tune ]; then
# 1. Tuning set: sharegpt-heldout prompts 30..53 (the report sets are the first 8/16/30), every generated node of
#    every round recorded and labelled against ar's answer (decoding with today's rule). 16 MB: kept in /tmp, not
#    committed. --tree 3,4,8 on the first 12 of them (a 24-prompt recording was stopped for time).
python3 $R/tree_rounds.py $CK --skip 30 --limit 24 --max-new-tokens 96 --tree 6,10,60 --json /tmp/h2-rounds-6-10-60.json
python3 $R/tree_rounds.py $CK --skip 30 --limit 12 --max-new-tokens 96 --tree 3,4,8 --json /tmp/h2-rounds-3-4-8-12.json
# 2. Reliability per depth, the per-depth power-law fit, replays (fit on the first 12 prompts, checked on the
#    other 12; then fitted on all 24: the rules the report run uses).
python3 $R/tree_calibration.py /tmp/h2-rounds-6-10-60.json --fit-prompts 12 > $R/calibration-6-10-60-half.txt
python3 $R/tree_calibration.py /tmp/h2-rounds-6-10-60.json --json $R/calibration-6-10-60.json > $R/calibration-6-10-60.txt
python3 $R/tree_ceiling.py /tmp/h2-rounds-6-10-60.json /tmp/h2-rounds-3-4-8-12.json > $R/ceiling.txt
MOA_FIT="slope=1.05/1/1/1.05/1.1/1,bias=0.05/0.05/0.05/0.2/0.2/0"
EAGLE_FIT="slope=1.05/1/1/0.95/0.95/1.1,bias=0.1/0.05/0/-0.1/0.05/0.25"
python3 $R/tree_calibration.py /tmp/h2-rounds-3-4-8-12.json --replay default --replay $MOA_FIT --replay $EAGLE_FIT \
  --replay slope=1,bias=-0.2 --replay slope=1,bias=0.1 > $R/replay-3-4-8.txt
# the depth discount (and a bare slope, a temperature on log q) replayed on all 24 prompts
REPLAYS="default slope=1,bias=-0.5 slope=1,bias=-0.2 slope=1,bias=-0.1 slope=1,bias=0.1 slope=1,bias=0.2 slope=0.8,bias=0"
REPLAYS="$REPLAYS slope=1.2,bias=0 slope=1,bias=0/-0.1/-0.2/-0.3/-0.4/-0.5"
python3 $R/tree_calibration.py /tmp/h2-rounds-6-10-60.json --replay ${REPLAYS// / --replay } > $R/depth-discount.txt
fi
if [ "${PART:-report}" = report ]; then
# 3. The report set (the first 16 prompts x 96), today's rule vs each draft's fit (on all 24 tuning prompts, 6,10,60),
#    interleaved in one moa-bench run per shape, then the paired per-prompt bootstrap. The session ran the two shapes
#    side by side on core 0 (TREES=6,10,60 and TREES=3,4,8), each sharing it with another helper's job.
MOA_FIT="slope=1.05/1/1/1.05/1.1/1,bias=0.05/0.05/0.05/0.2/0.2/0"
EAGLE_FIT="slope=1.05/1/1/0.95/0.95/1.1,bias=0.1/0.05/0/-0.1/0.05/0.25"
CAL="--checkpoint moa-cal=$D/moa --checkpoint eagle-cal=$D/eagle --tree-scoring moa-cal=$MOA_FIT --tree-scoring eagle-cal=$EAGLE_FIT"
for TREE in ${TREES:-6,10,60 3,4,8}; do
  OUTJ=$R/report-tree${TREE//,/-}-16x96.json
  moa-bench --threads 1 $CK $CAL --method ar,moa,moa-cal,eagle,eagle-cal --dataset sharegpt-heldout --temperature 0 \
    --limit 16 --max-new-tokens 96 --tree $TREE --json $OUTJ > ${OUTJ%.json}.txt
  python3 drafts/bench/results/2026-12-02-s10/paired.py $OUTJ moa:moa-cal eagle:eagle-cal >> ${OUTJ%.json}.txt
done
fi
