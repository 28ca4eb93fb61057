#!/usr/bin/env bash
# Session 3: continue each 1M-token draft by 1.4M tokens on 1,800 unseen ShareGPT conversations
# (2 epochs; the target's activations cached on disk after the first). Resumable: rerun this script.
cd "$(dirname "$0")/../../../.."  # the repository root
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1
for kind in moa eagle independent; do
  out=runs/smollm2-$kind-2p4M
  if [ -f $out/trainer_state.pt ]; then resume=--resume
  elif [ $kind = moa ]; then resume="--init drafts/checkpoints/smollm2-135m-instruct/$kind --no-staircase"  # curriculum done in the first 1M
  else resume="--init drafts/checkpoints/smollm2-135m-instruct/$kind"; fi
  moa-train --draft $kind $resume --data runs/sharegpt_fresh1800.jsonl --tokens 1400000 --lr 5e-4 \
    --out $out --feature-cache runs/features-fresh1800 >> runs/$kind-2p4M.log 2>&1 || exit 1
done
