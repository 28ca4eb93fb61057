#!/usr/bin/env bash
# Session 9 (H-stream-client): speculative streaming against round-based MoA and API streaming, issue 12's
# 4g goal ("moa-bench --remote on 4g: at least API streaming's tokens/s"). SmolLM2-135M on a moa-server
# (a CPU verifier) behind the link shaper, the shipped MoA draft on the client, methods interleaved per
# prompt, 3 prompts x 64 tokens at T = 0 as session 8's remote-s8/remote.sh. Server and client both on
# core 0 (`taskset -c 0`, one thread each: OMP_NUM_THREADS=1, --threads 1); core 1 ran the lead's training:
# the draft's time is taken from the verifier's core, so compare tok/s within one file, as ratios.
# The files: stream-DATASET-SHAPE.json (README.md: the table, from stream_table.py stream-*.json).
#   SHAPES="chain4 4,4,16 6,10,60" DATASETS="humaneval sharegpt-heldout" .../stream.sh   (then SHAPES=chain8)
# SERVER_CPUS=1 NAME=split: moa-server on CPU 1 (`--server-cpus`), files split-*.json (stream_split.sh).
# OUT (a folder from the repository root), METHODS, LINKS, LIMIT: other runs of the same kind (session 10's
# proposals/run.sh).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=${OUT:-drafts/bench/results/2026-12-02-s9/stream}
A="--threads 1 --cut-tokens 0 --no-gguf --link ${LINKS:-lan,4g} --method ${METHODS:-moa,moa-stream,api}"
A="$A --limit ${LIMIT:-3} --max-new-tokens 64"
SHAPES=${SHAPES:-"chain4 4,4,16 6,10,60"}
DATASETS=${DATASETS:-"humaneval sharegpt-heldout"}
for shape in $SHAPES; do
  case $shape in
    chain*) flags="--chain ${shape#chain}"; tag=$shape ;;
    *) flags="--tree $shape --server-max-tree ${shape##*,}"; tag=tree${shape//,/-} ;;
  esac
  for d in $DATASETS; do
    name=${NAME:-stream}-$d-$tag
    [ -e "$R/$name.json" ] && continue
    taskset -c 0 python3 -m app.bench $A ${SERVER_CPUS:+--server-cpus $SERVER_CPUS} --dataset "$d" $flags --json "$R/$name.json" 2>&1 | tee "$R/$name.log"
  done
done
