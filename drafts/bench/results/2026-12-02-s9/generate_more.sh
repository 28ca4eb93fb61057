#!/usr/bin/env bash
# Session 9: more exact-target training answers on core 1 next to the MoA training
# (resumable: the generator continues the file and never repeats a conversation):
#   nohup taskset -c 1 drafts/bench/results/2026-12-02-s9/generate_more.sh > runs/s9-gen.log 2>&1 &
# then gzip -c runs/answers.jsonl > drafts/data/generated/smollm2-answers.jsonl.gz
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
[ -f runs/answers.jsonl ] || gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz > runs/answers.jsonl
python -m drafts.data.target_answers --out runs/answers.jsonl --batch-size 32 --threads 1 --max-new-tokens 256 \
  --context 512 --max-user-turns 2 --sampled-share 0.25 --seed 0 --max-minutes "${MINUTES:-55}"
