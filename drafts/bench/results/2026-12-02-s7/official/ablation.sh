#!/usr/bin/env bash
# Issue 12 item 3, "whatever the official code does that ours does not" (official-diff.md): the
# official code's way of simulating verification in training, at equal tokens, as session 6's ablation:
#
#   moa-base     as ours: k ~ U{6..14}, a position reads target state strictly before it (depths 1..k)
#   moa-depth0   as the official code: a verified position reads its own target state (depths 0..k-1)
#   moa-p2-7     k ~ U{2..7}: depth 1 gets ~27 % of the loss instead of ~10 % (depths 1..7 cover chain 4
#                and the 6-deep tree)
#
# Each is fine-tuned from the shipped MoA for the same tokens, on the same exact-target conversations in
# the same order (seed 0), lr 2e-4, HASS top-K 1.0, no staircase (session 6's continuation), then
#   1. ONE interleaved moa-bench (sharegpt-heldout, T=0, chain 4; acceptance by depth), shipped moa and
#      eagle alongside;
#   2. the depth probe (depth_probe.py): top-1 agreement of the training pass at depths 1, 2, 4, 8 on 20
#      exact-target conversations held out of this fine-tuning and of the shipped drafts' training.
# Resumable: a finished variant is skipped, an interrupted one resumed, a written JSON kept.
# Pinned by the caller, one thread:
#   nohup taskset -c 0 drafts/bench/results/2026-12-02-s7/official/ablation.sh > runs/official-ablation.log 2>&1 &
# Settings (environment): TOKENS (per variant, default 24000), LIMIT (bench prompts, default 8), NEW (tokens
# per answer, default 64), VARIANTS (subset), RUNS (run directory prefix, default runs/official).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
TOKENS=${TOKENS:-24000}
LIMIT=${LIMIT:-8}
NEW=${NEW:-64}
RUNS=${RUNS:-runs/official}
OUT=drafts/bench/results/2026-12-02-s7/official
VARIANTS=${VARIANTS:-"moa-base moa-depth0 moa-p2-7"}
SHIPPED=drafts/checkpoints/smollm2-135m-instruct
ALL=$RUNS-answers.jsonl
TRAIN=$RUNS-train.jsonl
PROBE=$RUNS-probe.jsonl
log() { echo "official $(date -u +%H:%M:%S): $*"; }

# the exact-target answers; lines 306-325 (never in the shipped drafts' training) are held out for the probe
[ -f "$ALL" ] || gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz > "$ALL"
[ -f "$TRAIN" ] || { sed -n '306,325p' "$ALL" > "$PROBE"; sed '306,325d' "$ALL" > "$TRAIN"; }
# the activations cache: hard links to session 5's (replaced, never written in place), topped up on misses
CACHE=$RUNS-features-moa
if [ ! -d "$CACHE" ]; then mkdir -p "$CACHE"; cp -aln runs/s5-features-moa/. "$CACHE"/ 2>/dev/null || true; fi

options_of() {
  case $1 in
    moa-base) echo "--no-staircase" ;;
    moa-depth0) echo "--no-staircase --depth0" ;;
    moa-p2-7) echo "--no-staircase --verify-period 2-7" ;;
    *) echo "unknown variant $1" >&2; exit 2 ;;
  esac
}

train() {
  local name=$1 out=$RUNS-$1 start
  if [ -f "$out/DONE" ]; then log "$name: done already"; return; fi
  if [ -f "$out/trainer_state.pt" ]; then start="--resume"; else start="--init $SHIPPED/moa $(options_of "$name")"; fi
  log "$name: moa-train --draft moa $start ($TOKENS tokens)"
  # shellcheck disable=SC2086  # the option string splits into words on purpose
  moa-train --draft moa $start --data "$TRAIN" --tokens "$TOKENS" --lr 2e-4 --topk-weight 1.0 --warmup 5 \
    --checkpoint-every 10 --out "$out" --feature-cache "$CACHE" > "$out.log" 2>&1
  tail -c 400 "$out.log" | tr '\r' '\n' | grep "moa-train: done" || true
  touch "$out/DONE"
}

log "start: $(wc -l < "$TRAIN") training conversations, $TOKENS tokens per variant: $VARIANTS"
for name in $VARIANTS; do train "$name"; done

JSON=$OUT/official-sharegpt-t0-chain4-${LIMIT}x${NEW}.json
if [ -f "$JSON" ]; then log "bench: $JSON exists"; else
  checkpoints=() methods=ar,moa,eagle
  for name in $VARIANTS; do checkpoints+=(--checkpoint "$name=$RUNS-$name"); methods+=",$name"; done
  log "bench: $methods"
  moa-bench --threads 1 "${checkpoints[@]}" --method "$methods" --dataset sharegpt-heldout --temperature 0 \
    --limit "$LIMIT" --max-new-tokens "$NEW" --chain 4 --json "$JSON"
fi
python3 drafts/bench/results/2026-12-01-s6/ablation_table.py "$JSON" "$RUNS" $VARIANTS > "$OUT/table-${LIMIT}x${NEW}.md"
cat "$OUT/table-${LIMIT}x${NEW}.md"

PROBED=$OUT/depth_probe-ablation.json
if [ -f "$PROBED" ]; then log "probe: $PROBED exists"; else
  drafts=(--draft "moa=$SHIPPED/moa" --draft "eagle=$SHIPPED/eagle")
  for name in $VARIANTS; do drafts+=(--draft "$name=$RUNS-$name"); done
  log "probe: ${drafts[*]}"
  python3 "$OUT/depth_probe.py" "${drafts[@]}" --data "$PROBE" --skip 0 --limit 20 --depths 1,2,4,8 --no-infer \
    --json "$PROBED"
fi
log "done"
