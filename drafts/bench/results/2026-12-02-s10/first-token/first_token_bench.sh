#!/usr/bin/env bash
# Session 10 (H1): moa-bench --remote on 4g, the old code (a git worktree at the commit before the queued
# intake) and the new, one after the other: 3 x 64 tokens, chain 4, moa / moa-stream / api interleaved per
# prompt, T = 0, client and moa-server both on core 0 (shared with up to ten other processes this session).
#   git worktree add --detach /tmp/h1-before 36401aa     # before
#   .../first_token_bench.sh /tmp/h1-before before ; .../first_token_bench.sh /path/to/new after
# -> before-DATASET-chain4.json, after-DATASET-chain4.json here.
set -euo pipefail
R="$(cd "$(dirname "$0")" && pwd)"
cd "$1"
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
A="--threads 1 --cut-tokens 0 --no-gguf --link 4g --method moa,moa-stream,api --limit 3 --max-new-tokens 64 --chain 4"
for d in ${DATASETS:-humaneval sharegpt-heldout}; do
  taskset -c 0 python3 -m app.bench $A --dataset "$d" --json "$R/$2-$d-chain4.json" 2>&1 | tee "$R/$2-$d-chain4.log"
done
