#!/usr/bin/env bash
# Session 9 (lead): stream.sh again with the verifier on a core of its own, as on another machine:
# the client (and its draft) on core 0, moa-server on core 1 (`--server-cpus 1`), nothing else running.
# stream.sh ran both on one shared core, where every proposal the client drafted was taken from the
# verifier's time. Same flags otherwise (3 prompts x 64 tokens, T = 0, moa / moa-stream / api interleaved).
#   SHAPES="chain4 4,4,16" DATASETS="humaneval sharegpt-heldout" .../stream_split.sh
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s9/stream
A="--threads 1 --cut-tokens 0 --no-gguf --link lan,4g --method moa,moa-stream,api --limit 3 --max-new-tokens 64"
SHAPES=${SHAPES:-"chain4 4,4,16"}
DATASETS=${DATASETS:-"humaneval sharegpt-heldout"}
for shape in $SHAPES; do
  case $shape in
    chain*) flags="--chain ${shape#chain}"; tag=$shape ;;
    *) flags="--tree $shape --server-max-tree ${shape##*,}"; tag=tree${shape//,/-} ;;
  esac
  for d in $DATASETS; do
    name=split-$d-$tag
    [ -e "$R/$name.json" ] && continue
    taskset -c 0 python3 -m app.bench $A --server-cpus 1 --dataset "$d" $flags --json "$R/$name.json" 2>&1 | tee "$R/$name.log"
  done
done
