#!/usr/bin/env bash
# Offline re-sync on fresh prompts (session 13, issue 12's offline goal: MoA keeps >= 20 % of 32 offline
# tokens). Session 12 used sharegpt-heldout prompts 0-90 (0-45 less #17, then 46-90) and chose its rule
# on them; here two disjoint sets after them: TUNE = prompts 91-140 (rule changes are chosen on it),
# REPORT = prompts 141-199 (scored once, with the rules chosen on TUNE). No prompt of 91-199 is longer than
# the context, so --skip/--limit below give exactly these index ranges.
# The drafts: a copy of the shipped (session-11) checkpoints taken at the session's start
# (cp -r drafts/checkpoints/smollm2-135m-instruct /tmp/h1-drafts). T=0, cuts 8,32,64, one thread, core 0.
#
#   drafts/bench/results/2026-12-03-s13/offline-resync/run.sh   # both sets (~55 min, core 0 shared), then the scoring
#   PART=tune|report|score drafts/bench/results/2026-12-03-s13/offline-resync/run.sh   # one part
#
# Then the rules are scored again from the saved tokens (no drafting):
#   python3 drafts/bench/results/2026-12-03-s13/offline-resync/s13_resync_rules.py (see README.md)
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-03-s13/offline-resync
C=${DRAFTS:-/tmp/h1-drafts}; CORE=${CORE:-0}; PART=${PART:-both}
bench() {  # $1 name, $2 skip, $3 limit
  taskset -c "$CORE" moa-bench --offline-horizon 8,16,32 --cuts 8,32,64 --dataset sharegpt-heldout \
    --skip "$2" --limit "$3" --method moa,eagle,independent --no-target-state --threads 1 \
    --checkpoint "moa=$C/moa" --checkpoint "eagle=$C/eagle" --checkpoint "independent=$C/independent" \
    --json "$R/offline-$1.json" | tee "$R/offline-$1.txt"
}
if [[ $PART == both || $PART == tune ]]; then bench tune-91-140 91 50; fi
if [[ $PART == both || $PART == report ]]; then bench report-141-199 141 59; fi
[[ $PART == both || $PART == score ]] || exit 0

# The rules scored again from the saved tokens (a few minutes, no drafting). RULES: the session-12 rule (first: the
# baseline of the paired columns), the rule chosen on TUNE (now ResyncConfig's default) and TUNE's best without
# the lookup-token budget (4.4x the lookup tokens).
S=$R/s13_resync_rules.py
S12R=drafts/bench/results/2026-12-02-s12/offline-resync
RULES=(--rule s12= --rule s13=patience=32,resume=012345,hold=8,levels=1,nodes=8
       --rule wide=patience=32,resume=01234567,hold=16,levels=1,nodes=32)
taskset -c "$CORE" python3 "$S" grid "$R/offline-tune-91-140.json" --method moa --top 30 \
  --json "$R/grid-tune-91-140-moa.json" > "$R/grid-tune-91-140-moa.txt"
for part in tune-91-140 report-141-199; do
  taskset -c "$CORE" python3 "$S" compare "$R/offline-$part.json" --method moa,eagle,independent "${RULES[@]}" \
    --json "$R/rules-$part.json" | tee "$R/rules-$part.txt"
done
taskset -c "$CORE" python3 "$S" compare "$S12R/offline-resync-shipped-sharegpt-45x3x32.json" \
  "$S12R/offline-resync-shipped-sharegpt-next45x3x32.json" --method moa,eagle,independent "${RULES[@]}" \
  --json "$R/rules-s12-prompts-0-90.json" | tee "$R/rules-s12-prompts-0-90.txt"
