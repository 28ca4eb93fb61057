#!/bin/sh
# Session 7 (H-remote): round trips per 100 tokens of the remote engine, SmolLM2-135M + the shipped MoA
# draft, moa-server on 127.0.0.1 behind the link shaper, client and server pinned to core 0 of a
# 2-core AMD EPYC shared with 3-5 other jobs (tokens/s: compare moa with api within one file only).
# Each run goes through probe.py, which logs every request (requests-*.json; read them with
# requests.py); the benchmark itself is `moa-bench --remote` unchanged:
#   taskset -c 0 env OMP_NUM_THREADS=1 moa-bench --remote --threads 1 ... --json X.json
cd "$(dirname "$0")/../../../../.." || exit 1
R=drafts/bench/results/2026-12-02-s7/remote
P="taskset -c 0 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python3 $R/probe.py"
A="--threads 1 --cut-tokens 0 --no-gguf --link lan,4g --method moa,api --limit 3 --max-new-tokens 64"
run() { name=$1; shift; $P $R/requests-$name.json $A "$@" --json $R/$name.json; }
run humaneval-chain4 --dataset humaneval --chain 4
run humaneval-tree6-10-60 --dataset humaneval --tree 6,10,60
run sharegpt-heldout-tree6-10-60 --dataset sharegpt-heldout --tree 6,10,60
run sharegpt-heldout-chain4 --dataset sharegpt-heldout --chain 4
for d in sharegpt-heldout humaneval; do   # the same prompts in-process: tau without the network
  taskset -c 0 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python3 -m drafts.bench --threads 1 --method ar,moa --dataset $d \
    --limit 3 --max-new-tokens 64 --tree 6,10,60 --json $R/in-process-$d-tree6-10-60.json
done
run humaneval-tree4-4-16 --dataset humaneval --tree 4,4,16
run humaneval-paced --dataset humaneval
run sharegpt-heldout-tree4-4-16 --dataset sharegpt-heldout --tree 4,4,16
taskset -c 0 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python3 $R/verify_cost.py --reps 11 --json $R/verify_cost.json
# before this session's fix (commit 280b934, the Rewind and each Prefill chunk a round trip of its own):
#   moa-bench --remote --threads 1 --cut-tokens 0 --no-gguf --dataset humaneval --link lan,4g --method moa,api \
#             --limit 3 --max-new-tokens 64 --chain 4 | --tree 6,10,60      (before/*.json)
