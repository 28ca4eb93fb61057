#!/usr/bin/env bash
# Session 26 (no GPU): issue 12 item 3's open lead at a real budget. The shipped s24 MoA continued at equal tokens on
# the T=0.7 answers s24 never trained on, as is (core 0) and with the target's final hidden state added to its memory
# (--final-hidden, core 1; the new projection starts at zero, so both start as the same function). Resumable: rerun.
#   nohup drafts/bench/results/2026-12-05-s26/final-hidden/train.sh > runs/s26-train.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
DATA=runs/s26_t07_new.jsonl  # lines 2,315-7,652 of smollm2-answers-t07.jsonl.gz except 2,581-2,641 (s24's)
[ -f $DATA ] || gunzip -c drafts/data/generated/smollm2-answers-t07.jsonl.gz | awk 'NR>=2315 && !(NR>=2581 && NR<=2641)' > $DATA
TOKENS=${TOKENS:-1100000}
INIT=drafts/checkpoints/smollm2-135m-instruct/moa
echo "s26 final-hidden A/B: $(wc -l < $DATA) conversations, $TOKENS tokens each, lr 1e-4, seed 26; $(date -u +%H:%M)"
core=0
for variant in base final; do
  out=runs/s26-moa-$variant
  extra=""; [ $variant = final ] && extra=--final-hidden
  if [ -f $out/trainer_state.pt ]; then start=--resume; else start="--init $INIT --no-staircase $extra"; fi
  taskset -c $core moa-train --draft moa $start --data $DATA --tokens "$TOKENS" --lr 1e-4 --topk-weight 1.0 --seed 26 \
    --out $out --checkpoint-every 50 --max-minutes 100 >> runs/s26-moa-$variant.log 2>&1 &
  core=$((core + 1))
done
wait
echo "s26 final-hidden A/B: done $(date -u +%H:%M)"
