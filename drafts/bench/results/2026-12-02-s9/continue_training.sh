#!/usr/bin/env bash
# Session 9: MoA and EAGLE continued again, at equal tokens, from session 8's shipped checkpoints
# (runs/s8-moa, runs/s8-eagle) on all 2,256 exact-target conversations
# (drafts/data/generated/smollm2-answers.jsonl.gz; lines 1789-2256 are new to both drafts: their
# activations are added to the session-5 feature caches on first use).
# Resumable (each run resumes from its trainer_state.pt). Pinned to one core:
#   nohup taskset -c 1 drafts/bench/results/2026-12-02-s9/continue_training.sh > runs/s9.log 2>&1 &
# Settings (environment): TOKENS (per draft), LR, TOPK (HASS top-K weight).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
DATA=runs/s9_answers.jsonl
[ -f $DATA ] || gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz > $DATA
TOKENS=${TOKENS:-500000}
LR=${LR:-2e-4}
TOPK=${TOPK:-1.0}
echo "continue_training s9: $(wc -l < $DATA) conversations; $TOKENS tokens per draft, lr $LR, topk $TOPK; $(date -u +%H:%M)"
for kind in moa eagle; do
  out=runs/s9-$kind
  if [ -f $out/trainer_state.pt ]; then start=--resume; else start="--init runs/s8-$kind"; fi
  if [ $kind = moa ] && [ "$start" != --resume ]; then start="$start --no-staircase"; fi
  moa-train --draft $kind $start --data $DATA --tokens "$TOKENS" --lr "$LR" --topk-weight "$TOPK" --out $out \
    --checkpoint-every 20 --feature-cache runs/s5-features-$kind > runs/s9-$kind.log 2>&1 &
done
wait
echo "continue_training s9: done $(date -u +%H:%M)"
