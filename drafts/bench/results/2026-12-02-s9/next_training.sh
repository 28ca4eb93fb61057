#!/usr/bin/env bash
# Session 9 -> 10: the next continuation of MoA and EAGLE, started at the end of session 9 on core 0 and
# resumed by the next session (each run resumes from its trainer_state.pt). Session 9's continuation
# (continue_training.sh: lr 2e-4 restarted, 500k tokens ~ half the conversations) gained nothing, so this one
# trains at half the rate on a full pass over all 2,673 conversations (lines 1789-2673 new to both shipped
# drafts), from the shipped session-8 checkpoints, with ONE feature cache for both kinds (a miss computes what
# MoA and EAGLE read in one target pass; runs/s5-features-moa holds MoA's 1,499 cached conversations).
#   nohup taskset -c 0 drafts/bench/results/2026-12-02-s9/next_training.sh > runs/s10.log 2>&1 &
# Settings (environment): TOKENS (per draft), LR, TOPK (HASS top-K weight).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
DATA=runs/s10_answers.jsonl
[ -f $DATA ] || gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz | sed -n 1,2673p > $DATA  # sed reads to the end: no SIGPIPE under pipefail
TOKENS=${TOKENS:-800000}
LR=${LR:-1e-4}
TOPK=${TOPK:-1.0}
CACHE=runs/s5-features-moa
echo "next_training s10: $(wc -l < $DATA) conversations; $TOKENS tokens per draft, lr $LR, topk $TOPK; $(date -u +%H:%M)"
for kind in moa eagle; do
  out=runs/s10-$kind
  if [ -f $out/trainer_state.pt ]; then start=--resume; else start="--init drafts/checkpoints/smollm2-135m-instruct/$kind"; fi
  if [ $kind = moa ] && [ "$start" != --resume ]; then start="$start --no-staircase"; fi
  moa-train --draft $kind $start --data $DATA --tokens "$TOKENS" --lr "$LR" --topk-weight "$TOPK" --out $out \
    --checkpoint-every 20 --feature-cache $CACHE >> runs/s10-$kind.log 2>&1 &
done
wait
echo "next_training s10: done $(date -u +%H:%M)"
