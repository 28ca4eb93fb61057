#!/usr/bin/env bash
# Session 8 (lead): trees/remote.sh again with the session-8 drafts (shipped 5e7c9d0), on core 1: round trips per 100 tokens with GPU-sized trees,
# SmolLM2-135M + the shipped MoA draft, moa-server on 127.0.0.1 (a CPU verifier: big trees are slow in
# tokens/s here; the round trips are what the goal counts) behind the link shaper, MoA and API streaming
# interleaved per prompt, 3 prompts x 64 tokens like session 7's remote/run.sh. Client and server on core 1
# (`taskset -c 1`, one thread) of a 2-core AMD EPYC; core 0 ran other jobs: compare tok/s within one file.
# Each run goes through session 7's probe.py, which logs every request (requests-*.json: nodes sent per
# Verify; `python3 drafts/bench/results/2026-12-02-s7/remote/requests.py FILE` reads one).
# --server-max-tree: the CPU server's own cap is 64 nodes; a 100-node tree is what a GPU server takes.
#   SHAPES="10,10,100 6,10,60" DATASETS="sharegpt-heldout humaneval" .../remote.sh
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s8/remote-s8
P="taskset -c 1 python3 drafts/bench/results/2026-12-02-s7/remote/probe.py"
A="--threads 1 --cut-tokens 0 --no-gguf --link lan,4g --method moa,api --limit 3 --max-new-tokens 64"
SHAPES=${SHAPES:-"10,10,100 6,10,60"}
DATASETS=${DATASETS:-"sharegpt-heldout humaneval"}
for shape in $SHAPES; do
  total=${shape##*,}
  for d in $DATASETS; do
    name=remote-$d-tree${shape//,/-}
    [ -e "$R/$name.json" ] && continue
    $P "$R/requests-$name.json" $A --dataset "$d" --tree "$shape" --server-max-tree "$total" --json "$R/$name.json"
  done
done
