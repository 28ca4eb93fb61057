#!/usr/bin/env bash
# Session 5: the exact target's own answers (transformers fp32, batched, drafts.data.target_answers),
# then the shipped MoA and EAGLE drafts continued on them with the same token budget.
# Resumable: the answers file is appended to and skips done ids; each training resumes from its
# trainer_state.pt. Run pinned to one core, from anywhere:
#   nohup taskset -c 1 drafts/bench/results/2026-12-01-s5/continue_training.sh > runs/s5.log 2>&1 &
# Settings (environment): GEN_UNTIL (HH:MM UTC, when generation stops between batches),
# TOKENS (per draft; runs/s5-tokens overrides it when training starts), LR, TOPK (HASS top-K weight).
# Logs: runs/s5.log (generation), runs/s5-{moa,eagle}.log (training).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
DATA=${DATA:-runs/s5_answers.jsonl}
GEN_UNTIL=${GEN_UNTIL:-21:05}
LR=${LR:-3e-4}
TOPK=${TOPK:-1.0}
CK=drafts/checkpoints/smollm2-135m-instruct
# 1. answers, until GEN_UNTIL (skipped once training has started, so the data stays fixed under it)
if [ ! -d runs/s5-moa ]; then
  minutes=$(( ($(date -u -d "$GEN_UNTIL" +%s) - $(date -u +%s)) / 60 ))
  if [ "$minutes" -gt 0 ]; then
    python -m drafts.data.target_answers --out "$DATA" --batch-size ${BATCH:-32} --threads 1 \
      --max-new-tokens 256 --context 512 --max-user-turns 2 --sampled-share 0.25 --seed 0 --max-minutes "$minutes"
  fi
fi
TOKENS=$(cat runs/s5-tokens 2>/dev/null || echo "${TOKENS:-250000}")
echo "continue_training: $(wc -l < "$DATA") conversations in $DATA; $TOKENS tokens per draft, lr $LR, topk $TOPK"
# 2. both drafts at once (each gets half the core, so both end together), equal tokens, from the
# shipped checkpoints (MoA without its staircase curriculum); activations cached for later epochs
for kind in moa eagle; do
  out=runs/s5-$kind
  if [ -f $out/trainer_state.pt ]; then
    start=--resume
  else
    start="--init $CK/$kind"
    if [ $kind = moa ]; then start="$start --no-staircase"; fi
  fi
  moa-train --draft $kind $start --data "$DATA" --tokens "$TOKENS" --lr "$LR" --topk-weight "$TOPK" --out $out \
    --feature-cache runs/s5-features-$kind > runs/s5-$kind.log 2>&1 &
done
wait
echo "continue_training: done $(date -u +%H:%M)"
