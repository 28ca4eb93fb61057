#!/usr/bin/env bash
# Session 27 (no GPU): issue 12 item 4, training that keeps going, at equal tokens for both kinds.
#   core 1: the shipped s24 EAGLE gets session 26's 1,100,160 tokens (the data moa-base26 had; same seed), then
#           the 1,405 T=0.7 conversations session 26 generated (lines 7,653-9,057), TOKENS2 tokens;
#   core 0: moa-base26 (session 26's candidate) gets the same TOKENS2 tokens on those lines.
# Resumable: rerun.  nohup drafts/bench/results/2026-12-05-s27/train.sh > runs/s27-train.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
GZ=drafts/data/generated/smollm2-answers-t07.jsonl.gz
DATA1=runs/s26_t07_new.jsonl  # lines 2,315-7,652 except 2,581-2,641 (session 26's)
DATA2=runs/s27_t07_new.jsonl  # lines 7,653-9,057 (no draft has seen them)
[ -f $DATA1 ] || gunzip -c $GZ | awk 'NR>=2315 && !(NR>=2581 && NR<=2641)' > $DATA1
[ -f $DATA2 ] || gunzip -c $GZ | awk 'NR>=7653 && NR<=9057' > $DATA2
TOKENS2=${TOKENS2:-400000}
MOA=drafts/bench/results/2026-12-05-s26/final-hidden/candidates/moa-base26
EAGLE=drafts/checkpoints/smollm2-135m-instruct/eagle
COMMON="--lr 1e-4 --topk-weight 1.0 --checkpoint-every 50 --max-minutes 100"
echo "s27: stage 1 $(wc -l < $DATA1), stage 2 $(wc -l < $DATA2) conversations, $TOKENS2 tokens; $(date -u +%H:%M)"

run() {  # core out init data tokens seed kind
  local core=$1 out=$2 init=$3 data=$4 tokens=$5 seed=$6 kind=$7 start
  [ -f $out/done ] && return 0
  if [ -f $out/trainer_state.pt ]; then start=--resume; else start="--init $init"; fi
  [ $kind = moa ] && [ "$start" != --resume ] && start="$start --no-staircase"
  taskset -c $core moa-train --draft $kind $start --data $data --tokens "$tokens" --seed $seed --out $out $COMMON \
    >> $out.log 2>&1 && touch $out/done
}
( run 0 runs/s27-moa $MOA $DATA2 "$TOKENS2" 27 moa; echo "s27: moa done $(date -u +%H:%M)" ) &
( run 1 runs/s26-eagle $EAGLE $DATA1 1100000 26 eagle; echo "s27: eagle stage 1 done $(date -u +%H:%M)"
  run 1 runs/s27-eagle runs/s26-eagle $DATA2 "$TOKENS2" 27 eagle; echo "s27: eagle done $(date -u +%H:%M)" ) &
wait
echo "s27: done $(date -u +%H:%M)"
