#!/usr/bin/env bash
# The T = 0.7 answer generators (sessions 23-26): A continues the seed-1 order of the ShareGPT train split
# (runs/answers-t07.jsonl), B the prompts from its position 8,000 on (runs/prompts-t07b.jsonl, runs/answers-t07b.jsonl).
# One core each, resumable (a rerun skips the ids written). Then loop/append_t07.py appends their new lines.
#   drafts/bench/results/loop/gen_t07.sh A 48    # generator, minutes; B likewise (core 1); PIDs in runs/a.pid, runs/b.pid
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
unset OMP_WAIT_POLICY
which=${1:?A or B}; minutes=${2:?minutes}
COMMON="--batch-size 32 --threads 1 --max-new-tokens 256 --context 512 --max-user-turns 2 --sampled-share 1.0 --temperature 0.7 --seed 1 --max-minutes $minutes"
mkdir -p runs
if [ "$which" = A ]; then
  nohup taskset -c 0 python3 -m drafts.data.target_answers --out runs/answers-t07.jsonl $COMMON >> runs/answers-t07-gen.log 2>&1 &
  echo $! > runs/a.pid
else
  [ -f runs/prompts-t07b.jsonl ] || python3 -c "from drafts.data.sharegpt import load_sharegpt; from drafts.data.target_answers import write_prompts, shuffled; from pathlib import Path; write_prompts(Path('runs/prompts-t07b.jsonl'), shuffled(load_sharegpt('train'), 1)[8_000:])"
  nohup taskset -c 1 python3 -m drafts.data.target_answers --prompts runs/prompts-t07b.jsonl --out runs/answers-t07b.jsonl $COMMON >> runs/answers-t07b-gen.log 2>&1 &
  echo $! > runs/b.pid
fi
