#!/usr/bin/env bash
# The T = 0.7 answer generators (sessions 23-29) over the seed-1 order of the ShareGPT train split: A answered
# positions 0-7,999 (runs/answers-t07.jsonl; done, retired in session 29: it would repeat B's prompts), B answers
# 8,000-15,499 (runs/prompts-t07b.jsonl, runs/answers-t07b.jsonl; `--limit` keeps it out of C's range), C 15,500 to
# the end, 17,189 (runs/prompts-t07c.jsonl, runs/answers-t07c.jsonl). One core each, resumable (a rerun skips the
# ids written). Then loop/append_t07.py appends their new lines.
#   drafts/bench/results/loop/gen_t07.sh B 48    # generator, minutes; B on core 1, C on core 0; PIDs in runs/b.pid, c.pid
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
unset OMP_WAIT_POLICY
which=${1:?B or C}; minutes=${2:?minutes}
COMMON="--batch-size 32 --threads 1 --max-new-tokens 256 --context 512 --max-user-turns 2 --sampled-share 1.0 --temperature 0.7 --seed 1 --max-minutes $minutes"
mkdir -p runs
write() {  # write() FILE FROM: the seed-1 order's prompts from position FROM on
  [ -f "$1" ] || python3 -c "from drafts.data.sharegpt import load_sharegpt; from drafts.data.target_answers import write_prompts, shuffled; from pathlib import Path; write_prompts(Path('$1'), shuffled(load_sharegpt('train'), 1)[$2:])"
}
if [ "$which" = B ]; then
  write runs/prompts-t07b.jsonl 8000
  nohup taskset -c 1 python3 -m drafts.data.target_answers --prompts runs/prompts-t07b.jsonl --limit 7500 --out runs/answers-t07b.jsonl $COMMON >> runs/answers-t07b-gen.log 2>&1 &
  echo $! > runs/b.pid
elif [ "$which" = C ]; then
  write runs/prompts-t07c.jsonl 15500
  nohup taskset -c 0 python3 -m drafts.data.target_answers --prompts runs/prompts-t07c.jsonl --out runs/answers-t07c.jsonl $COMMON >> runs/answers-t07c-gen.log 2>&1 &
  echo $! > runs/c.pid
else
  echo "gen_t07.sh: B or C (A answered positions 0-7,999 and is retired)" >&2; exit 2
fi
