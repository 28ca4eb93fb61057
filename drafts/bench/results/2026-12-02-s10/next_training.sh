#!/usr/bin/env bash
# Session 10 -> 11: the next continuation of MoA and EAGLE, from the shipped session-10 checkpoints, at lr 1e-4
# (session 10's rate, which gained on both shapes; session 9's 2e-4 gained nothing), on ALL committed
# exact-target conversations (session 10 trained on the first 2,673 and covered 1,476 of them: a full pass needs
# ~1.1M tokens), with one feature cache for both kinds. Resumable: each run resumes from its trainer_state.pt.
#   nohup taskset -c 1 drafts/bench/results/2026-12-02-s10/next_training.sh > runs/s11.log 2>&1 &
# Settings (environment): TOKENS (per draft), LR, TOPK (HASS top-K weight). Then bench.sh with runs/s11-*.
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
mkdir -p runs
DATA=runs/s11_answers.jsonl
[ -f $DATA ] || gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz > $DATA
TOKENS=${TOKENS:-1100000}
LR=${LR:-1e-4}
TOPK=${TOPK:-1.0}
CACHE=runs/s5-features-moa
echo "next_training s11: $(wc -l < $DATA) conversations; $TOKENS tokens per draft, lr $LR, topk $TOPK; $(date -u +%H:%M)"
for kind in moa eagle; do
  out=runs/s11-$kind
  if [ -f $out/trainer_state.pt ]; then start=--resume; else start="--init drafts/checkpoints/smollm2-135m-instruct/$kind"; fi
  if [ $kind = moa ] && [ "$start" != --resume ]; then start="$start --no-staircase"; fi
  moa-train --draft $kind $start --data $DATA --tokens "$TOKENS" --lr "$LR" --topk-weight "$TOPK" --out $out \
    --checkpoint-every 20 --feature-cache $CACHE >> runs/s11-$kind.log 2>&1 &
done
wait
echo "next_training s11: done $(date -u +%H:%M)"
