#!/usr/bin/env bash
# Session 25, for the next GPU session (issue 12 item 8: "one GPU benchmark of MoA vs EAGLE with trees"): a call
# after session 23's device_run.sh on the same warm machine, whose WORK holds the target's GGUF stand-in
# (site/), the drafts it trained from (init/moa, init/eagle) and the ones it trained (train-moa, train-eagle).
#   run(command="OUT=... bash drafts/bench/results/2026-12-04-s25/gpu/device_bench.sh", timeout_s=240)
# moa-bench on the device, fp32 (exact: each method's output against ar's), the GPU verifier's trees 6,10,60 (the
# goal's) and 6,10,100 (the remote engine's GPU default), sharegpt-heldout and humaneval, LIMIT (16) prompts x
# MAX_NEW (96) tokens, methods interleaved per prompt: ar, the drafts it trained from (moa, eagle) and, when present,
# the trained ones (moa-new, eagle-new). $OUT gets bench-<dataset>-<tree>.json/.txt and bench.log (<= 9 files).
# Rehearsed on the CPU: WORK=<a folder with init/moa, init/eagle> DEVICE=cpu LIMIT=1 MAX_NEW=8 TREES=6,10,60.
set -uo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
WORK=${WORK:-/tmp/gpu-work}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:?set OUT}
mkdir -p "$OUT"
export PYTHONPATH=$WORK/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 MOA_CHAT_CACHE=$WORK/cache TOKENIZERS_PARALLELISM=false
exec > >(tee -a "$OUT/bench.log") 2>&1
checkpoints=(--checkpoint "moa=$WORK/init/moa" --checkpoint "eagle=$WORK/init/eagle")
methods=ar,moa,eagle
for kind in moa eagle; do
  if [ -f "$WORK/train-$kind/draft.safetensors" ]; then
    checkpoints+=(--checkpoint "$kind-new=$WORK/train-$kind")
    methods=$methods,$kind-new
  fi
done
echo "$(date -u +%H:%M:%S) device_bench: methods $methods on $DEVICE"
for tree in ${TREES:-6,10,60 6,10,100}; do
  for dataset in sharegpt-heldout humaneval; do
    name=bench-$dataset-tree${tree//,/-}
    timeout -k 10 "${EACH_S:-50}" python3 -m drafts.bench --device "$DEVICE" --dtype float32 --method "$methods" \
      "${checkpoints[@]}" --tree "$tree" --dataset "$dataset" --limit "${LIMIT:-16}" --max-new-tokens "${MAX_NEW:-96}" \
      --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
    echo "$(date -u +%H:%M:%S) $name rc $?"
    grep -a -A8 " method " "$OUT/$name.txt" | grep -av "moa-bench:"
  done
done
