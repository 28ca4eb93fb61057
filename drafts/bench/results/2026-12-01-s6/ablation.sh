#!/usr/bin/env bash
# Issue 12 items 2-3 at equal tokens: HASS context alignment for EAGLE, and MoA's architecture
# variants ("why MoA does not beat EAGLE"), each fine-tuned from the shipped checkpoint of its kind
# for the same token budget, on the same data in the same order (seed 0), with the same schedule
# (lr 2e-4, HASS top-K 1.0, as session 6's continuation), then ONE interleaved moa-bench run of all
# of them against ar and the shipped drafts (T=0, sharegpt-heldout, chain 4; acceptance by depth).
#
#   eagle-off     EAGLE, teacher forcing (as shipped)
#   eagle-align3  EAGLE, HASS context alignment, 3 steps (--align-steps 3)
#   moa-base      MoA as is
#   moa-lsa10     LSA reads 10 of the 30 target layers (every third, the last included)
#   moa-lsa1      LSA reads the last target layer only
#   moa-final     the target's final hidden state added to each verified token's memory vector
#   moa-tli1      Target Layer Inference N=1 (raw SmoothL1 on the last layer's input)
#   moa-tli1n     TLI N=1, the tail-input loss divided by the target's RMS per position
#
# Every variant starts from the shipped weights (LSA's weights do not depend on how many layers it
# reads; the final-hidden projection starts at zero; the TLI layers are the target's own), so none
# is trained from scratch. Resumable: a finished variant is skipped, an interrupted one resumed, a
# written bench JSON kept. Pinned by the caller, one thread:
#   nohup taskset -c 0 drafts/bench/results/2026-12-01-s6/ablation.sh > runs/hass-ablation.log 2>&1 &
# Settings (environment): TOKENS (per variant, default 30000), LIMIT (bench prompts, default 12),
# NEW (tokens per answer, default 96), RUNS (run directory prefix, default runs/hass), VARIANTS
# (space-separated subset), REFS (shipped drafts benched alongside, default "moa,eagle"; "" for none),
# OUT (results directory).
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
TOKENS=${TOKENS:-30000}
LIMIT=${LIMIT:-12}
NEW=${NEW:-96}
RUNS=${RUNS:-runs/hass}
OUT=${OUT:-drafts/bench/results/2026-12-01-s6/ablation}
REFS=${REFS-moa,eagle}
VARIANTS=${VARIANTS:-"eagle-off eagle-align3 moa-base moa-lsa10 moa-lsa1 moa-final moa-tli1 moa-tli1n"}
SHIPPED=drafts/checkpoints/smollm2-135m-instruct
DATA=runs/hass_answers.jsonl
COMMON=(--data $DATA --tokens "$TOKENS" --lr 2e-4 --topk-weight 1.0 --warmup 5 --checkpoint-every 10)
mkdir -p "$OUT"
[ -f $DATA ] || gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz > $DATA
log() { echo "ablation $(date -u +%H:%M:%S): $*"; }

kind_of() { echo "${1%%-*}"; }

# the options of a variant: "architecture (new runs only) | training (every run, resumed ones too)"
options_of() {
  case $1 in
    eagle-off) echo "|" ;;
    eagle-align3) echo "| --align-steps 3" ;;
    moa-base) echo "--no-staircase |" ;;
    moa-lsa10) echo "--no-staircase --lsa-layers 10 |" ;;
    moa-lsa1) echo "--no-staircase --lsa-layers 1 |" ;;
    moa-final) echo "--no-staircase --final-hidden |" ;;
    moa-tli1) echo "--no-staircase --tli 1 |" ;;
    moa-tli1n) echo "--no-staircase --tli 1 | --tail-loss normalised" ;;
    *) echo "unknown variant $1" >&2; exit 2 ;;
  esac
}

# the activations cache of a kind: hard links to session 5/6's cache (never written in place by
# anyone, so sharing the files is safe), topped up before every run; misses are computed and stored here
cache_of() {
  local kind=$1 dir=$RUNS-features-$kind
  mkdir -p "$dir"
  if [ -d runs/s5-features-$kind ]; then cp -aln runs/s5-features-$kind/. "$dir"/ 2>/dev/null || true; fi
  echo "$dir"
}

train() {
  local name=$1 kind out opts arch trainopts start
  kind=$(kind_of "$name")
  out=$RUNS-$name
  opts=$(options_of "$name")
  arch=${opts%%|*}
  trainopts=${opts#*|}
  if [ -f "$out/DONE" ]; then log "$name: done already"; return; fi
  if [ -f "$out/trainer_state.pt" ]; then start="--resume"; else start="--init $SHIPPED/$kind $arch"; fi
  log "$name: moa-train --draft $kind $start $trainopts (${TOKENS} tokens)"
  # shellcheck disable=SC2086  # the option strings split into words on purpose
  moa-train --draft "$kind" $start $trainopts "${COMMON[@]}" --out "$out" \
    --feature-cache "$(cache_of "$kind")" > "$RUNS-$name.log" 2>&1
  tail -c 400 "$RUNS-$name.log" | tr '\r' '\n' | grep "moa-train: done" || true
  touch "$out/DONE"
}

log "start: $(wc -l < $DATA) conversations, $TOKENS tokens per variant: $VARIANTS"
for name in $VARIANTS; do train "$name"; done

JSON=$OUT/ablation-sharegpt-t0-chain4-${LIMIT}x${NEW}.json
if [ -f "$JSON" ]; then log "bench: $JSON exists"; else
  checkpoints=() methods=ar${REFS:+,$REFS}
  for name in $VARIANTS; do checkpoints+=(--checkpoint "$name=$RUNS-$name"); methods+=",$name"; done
  log "bench: $methods"
  moa-bench --threads 1 "${checkpoints[@]}" --method "$methods" --dataset sharegpt-heldout --temperature 0 \
    --limit "$LIMIT" --max-new-tokens "$NEW" --chain 4 --json "$JSON"
fi
python3 drafts/bench/results/2026-12-01-s6/ablation_table.py "$JSON" $RUNS $VARIANTS > "$OUT/table-${LIMIT}x${NEW}.md"
cat "$OUT/table-${LIMIT}x${NEW}.md"
log "done"
