#!/usr/bin/env bash
# Issue 12 item 2: the HASS top-K distillation term (moa-train --topk-weight, K=10) on vs off, at
# equal tokens, for MoA and EAGLE. Each kind is continued from its shipped checkpoint twice, with
# --topk-weight 1.0 (as every run since session 5) and with --topk-weight 0, on the same fixed slice
# of the exact-target conversations (lines START..START+N-1 of smollm2-answers.jsonl.gz: from line
# 685 on they are new to the shipped drafts, which saw lines 1-684 for ~3 epochs and predict them
# at ~0.8 top-1, so a continuation there measures little), in the same order (seed 0), with session 8's continuation flags (continue_training.sh: lr 2e-4, default warm-up,
# checkpoint every 20 steps; MoA without the staircase); a kind's on and off runs train side by side.
# Then
#   1. the probe (probe_pairs.py): top-1 agreement with the target of the training pass (MoA at
#      depths 1, 2, 4) on 40 held-out exact-target conversations (lines PROBE.., new to every draft
#      here), paired by conversation: thousands of positions, the high-power measure;
#   2. ONE interleaved moa-bench of all four with ar (and REFS, the shipped drafts) on
#      sharegpt-heldout, T=0, chain 4, per-prompt records kept so the on-off difference gets a
#      paired standard error (hass_table.py).
#
#   moa-on / moa-off      MoA, top-K weight 1.0 / 0
#   eagle-on / eagle-off  EAGLE, top-K weight 1.0 / 0
#
# Resumable: a finished run is skipped, an interrupted one resumed, a written bench JSON kept.
# Pinned by the caller, one thread:
#   nohup taskset -c 0 drafts/bench/results/2026-12-02-s8/hass/hass.sh > runs/s8-hass.log 2>&1 &
# Settings (environment): TOKENS_EAGLE / TOKENS_MOA (per run, default 40000 / 24000), START / N (first line and number of
# conversations, default 685 / 88: one pass is ~40.4k sequence tokens), LIMIT / NEW (bench prompts / tokens per answer, default 12 / 96),
# SHAPE (moa-bench shape flags, default "--chain 4"), TAG (JSON name part, default chain4),
# KINDS (subset of "eagle moa"), REFS (shipped drafts benched alongside, default "moa,eagle"; "" for
# none), PROBE (first line of the probe's conversations, default 1001), STAGES (default "train probe bench").
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
TOKENS_EAGLE=${TOKENS_EAGLE:-40000}
TOKENS_MOA=${TOKENS_MOA:-24000}
START=${START:-685}
N=${N:-88}
LIMIT=${LIMIT:-12}
NEW=${NEW:-96}
SHAPE=${SHAPE:-"--chain 4"}
TAG=${TAG:-chain4}
KINDS=${KINDS:-"eagle moa"}
REFS=${REFS-moa,eagle}
PROBE=${PROBE:-1001}
STAGES=${STAGES:-"train probe bench"}
RUNS=runs/s8-hass
OUT=drafts/bench/results/2026-12-02-s8/hass
SHIPPED=drafts/checkpoints/smollm2-135m-instruct
DATA=runs/s8_hass_answers.jsonl
PROBE_DATA=runs/s8_hass_probe.jsonl
VARIANTS=""
for kind in $KINDS; do VARIANTS+=" $kind-on $kind-off"; done
log() { echo "hass $(date -u +%H:%M:%S): $*"; }

# (sed quits early: gunzip's SIGPIPE must not stop the script under pipefail)
[ -f $DATA ] || { gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz 2>/dev/null || true; } |
  sed -n "$START,$((START + N - 1))p;$((START + N - 1))q" > $DATA
[ -f $PROBE_DATA ] || { gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz 2>/dev/null || true; } |
  sed -n "$PROBE,$((PROBE + 39))p;$((PROBE + 39))q" > $PROBE_DATA

# the activations cache of a kind, this experiment's own: the "on" run fills it, the "off" run reads it
# (every activation goes through float16 either way, so both see the same numbers)
cache_of() { echo "$RUNS-features-$1"; }

train() {
  local name=$1 kind=${1%%-*} out=$RUNS-$1 topk start tokens
  tokens=$TOKENS_EAGLE; [ "$kind" = moa ] && tokens=$TOKENS_MOA
  case $name in *-on) topk=1.0 ;; *-off) topk=0 ;; *) echo "unknown variant $name" >&2; exit 2 ;; esac
  if [ -f "$out/DONE" ]; then log "$name: done already"; return; fi
  if [ -f "$out/trainer_state.pt" ]; then start="--resume"; else start="--init $SHIPPED/$kind"; fi
  if [ "$kind" = moa ] && [ "$start" != --resume ]; then start="$start --no-staircase"; fi
  log "$name: moa-train --draft $kind $start --topk-weight $topk ($tokens tokens)"
  # shellcheck disable=SC2086  # the option string splits into words on purpose
  moa-train --draft "$kind" $start --data $DATA --tokens "$tokens" --lr 2e-4 --topk-weight "$topk" \
    --checkpoint-every 20 --out "$out" --feature-cache "$(cache_of "$kind")" > "$out.log" 2>&1
  tail -c 400 "$out.log" | tr '\r' '\n' | grep "moa-train: done" || true
  touch "$out/DONE"
}

has() { [[ " $STAGES " == *" $1 "* ]]; }

log "start: $(wc -l < $DATA) conversations, $TOKENS_EAGLE (EAGLE) / $TOKENS_MOA (MoA) tokens per run:$VARIANTS"
if has train; then
  for kind in $KINDS; do
    train "$kind-on" & train "$kind-off" & wait  # side by side: one core, but the same share each
  done
fi

PROBED=$OUT/probe-pairs.json
if has probe && [ ! -f "$PROBED" ]; then
  drafts=(--draft "moa=$SHIPPED/moa" --draft "eagle=$SHIPPED/eagle")
  for name in $VARIANTS; do drafts+=(--draft "$name=$RUNS-$name"); done
  log "probe: ${drafts[*]}"
  python3 $OUT/probe_pairs.py "${drafts[@]}" --data $PROBE_DATA --limit 40 --depths 1,2,4 --json "$PROBED"
fi
if has probe; then python3 $OUT/probe_pairs.py --json "$PROBED" --rescore | tee "$OUT/probe-pairs.md"; fi

JSON=$OUT/hass-sharegpt-t0-$TAG-${LIMIT}x${NEW}.json
if ! has bench; then log "done"; exit 0; fi
if [ -f "$JSON" ]; then log "bench: $JSON exists"; else
  checkpoints=() methods=ar${REFS:+,$REFS}
  for name in $VARIANTS; do checkpoints+=(--checkpoint "$name=$RUNS-$name"); methods+=",$name"; done
  log "bench: $methods, $SHAPE"
  # shellcheck disable=SC2086  # the shape flags split into words on purpose
  moa-bench --threads 1 "${checkpoints[@]}" --method "$methods" --dataset sharegpt-heldout --temperature 0 \
    --limit "$LIMIT" --max-new-tokens "$NEW" $SHAPE --json "$JSON"
fi
python3 $OUT/hass_table.py "$JSON" $RUNS > "$OUT/table-$TAG-${LIMIT}x${NEW}.md"
cat "$OUT/table-$TAG-${LIMIT}x${NEW}.md"
log "done"
