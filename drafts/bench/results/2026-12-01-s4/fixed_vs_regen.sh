#!/usr/bin/env bash
# Session 4: fixed vs target-regenerated responses at scale, on the same 800 ShareGPT questions.
# Each stage is skipped when its output exists and moa-train resumes, so rerunning continues.
# No OMP_WAIT_POLICY=PASSIVE: it slows llama.cpp ~4x and torch's small ops too (see README).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-01-s4
TOKENS=${TOKENS:-600000}
[ -f runs/sharegpt_fresh1800.jsonl ] || python drafts/bench/results/2026-11-29-s3/make_fresh.py 2368 1800 runs/sharegpt_fresh1800.jsonl
[ -f runs/fresh_short.jsonl ] || python $R/short_first_turns.py runs/sharegpt_fresh1800.jsonl 256 1800 runs/fresh_short.jsonl
if [ ! -f runs/base1M/eagle/draft.safetensors ]; then  # the EAGLE draft shipped before session 3 (1M tokens)
  mkdir -p runs/base1M/eagle
  for f in config.json draft.safetensors; do
    git show 1053255^:drafts/checkpoints/smollm2-135m-instruct/eagle/$f > runs/base1M/eagle/$f
  done
fi
# 1. SmolLM2's own greedy answers to the first question of 800 conversations (llama.cpp, resumable)
python -m drafts.data.regenerate --data runs/fresh_short.jsonl --limit 800 --max-user-turns 1 \
  --temperature 0 --threads 2 --out runs/short800_regen.jsonl
# 2. the same 800 questions with ShareGPT's original first answers
python $R/pair_fixed.py runs/short800_regen.jsonl runs/sharegpt_fresh1800.jsonl runs/short800_fixed.jsonl
# 3. the 1M-token EAGLE draft of session 2, fine-tuned on each with the same command
for arm in fixed regen; do
  out=runs/eagle-short800-$arm
  if [ -f $out/trainer_state.pt ]; then start=--resume; else start="--init runs/base1M/eagle"; fi
  moa-train --draft eagle $start --data runs/short800_$arm.jsonl --tokens $TOKENS --lr 5e-4 \
    --out $out --feature-cache runs/features-short800 >> runs/eagle-short800-$arm.log 2>&1
done
