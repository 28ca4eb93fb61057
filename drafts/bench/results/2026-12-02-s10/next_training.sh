#!/usr/bin/env bash
# Session 10 -> 11: the next continuation of MoA and EAGLE, from the shipped (session-10) checkpoints, at lr 1e-4
# (session 10's rate, which gained on both shapes; session 9's 2e-4 gained nothing), on ALL committed
# exact-target conversations (session 10 trained on the first 2,673 and covered 1,476 of them: a full pass needs
# ~1.1M tokens), with one feature cache for both kinds. Resumable: each run resumes from its trainer_state.pt.
#   nohup taskset -c 1 drafts/bench/results/2026-12-02-s10/next_training.sh > runs/s12.log 2>&1 &
# Settings (environment): RUN (runs/RUN-{moa,eagle}, default s12; session 11 ran RUN=s11 TOKENS=900000), LINES (the first LINES conversations, default
# all), TOKENS (per draft), LR, TOPK (HASS top-K weight), SEED, INIT (the folder holding moa/ and eagle/ to start from; default the shipped
# checkpoints). Then `OUT=<that session's folder> RUN=s12 bench.sh`. Session 9's next_training.sh
# is this script with RUN=s10 LINES=2673 TOKENS=800000.
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
mkdir -p runs
RUN=${RUN:-s12}
DATA=runs/${RUN}_answers.jsonl
# sed, not head: head's early exit would fail the pipe under pipefail
[ -f $DATA ] || gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz | sed -n "1,${LINES:-\$}p" > $DATA
TOKENS=${TOKENS:-1100000}
LR=${LR:-1e-4}
TOPK=${TOPK:-1.0}
SEED=${SEED:-12}  # the data order: session 11 ran the default seed (0) and covered 2,222 of 3,378; another seed starts elsewhere
CACHE=runs/s5-features-moa
INIT=${INIT:-drafts/checkpoints/smollm2-135m-instruct}
echo "next_training $RUN: $(wc -l < $DATA) conversations; $TOKENS tokens per draft, lr $LR, topk $TOPK, from $INIT; $(date -u +%H:%M)"
for kind in moa eagle; do
  out=runs/$RUN-$kind
  if [ -f $out/trainer_state.pt ]; then start=--resume; else start="--init $INIT/$kind"; fi
  if [ $kind = moa ] && [ "$start" != --resume ]; then start="$start --no-staircase"; fi
  moa-train --draft $kind $start --data $DATA --tokens "$TOKENS" --lr "$LR" --topk-weight "$TOPK" --seed "$SEED" --out $out \
    --checkpoint-every 20 --feature-cache $CACHE >> runs/$RUN-$kind.log 2>&1 &
done
wait
echo "next_training $RUN: done $(date -u +%H:%M)"
