#!/usr/bin/env bash
# Session 3 chain: wait for the MoA continuation (pid $1), train EAGLE, measure, then the
# independent draft and its measurement. Each step is skipped when already done; rerun to resume.
cd "$(dirname "$0")/../../../.."  # the repository root
while kill -0 $1 2>/dev/null; do sleep 15; done
grep -q "moa-train: done" runs/moa-2p4M.log || drafts/bench/results/2026-11-29-s3/cont_cache.sh   # MoA interrupted: resume it (and the rest)
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE HF_HUB_OFFLINE=1
train() {
  kind=$1; out=runs/smollm2-$kind-2p4M
  grep -q "moa-train: done" runs/$kind-2p4M.log 2>/dev/null && return
  if [ -f $out/trainer_state.pt ]; then resume=--resume; else resume="--init drafts/checkpoints/smollm2-135m-instruct/$kind"; fi
  moa-train --draft $kind $resume --data runs/sharegpt_fresh1800.jsonl --tokens 1400000 --lr 5e-4 \
    --out $out --feature-cache runs/features-fresh1800 >> runs/$kind-2p4M.log 2>&1
}
train eagle
drafts/bench/results/2026-11-29-s3/bench_s3.sh
train independent
drafts/bench/results/2026-11-29-s3/bench_s3_independent.sh
