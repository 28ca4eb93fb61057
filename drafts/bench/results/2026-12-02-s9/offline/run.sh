#!/usr/bin/env bash
# Offline horizon (issue 12 item 7), session 9: tokens each trained draft keeps writing alone after a
# cut (8/16/32), in-process, T=0, fp32 and int8 (the engine's local/offline default on a CPU:
# settings draft_quantize=int8), plus the target continuing itself (the harness's check: 100 %).
# Same prompts as session 6 (sharegpt-heldout, the first 45 that fit, cuts 8,32,64).
#
#   drafts/bench/results/2026-12-02-s9/offline/run.sh [MOA_DIR [EAGLE_DIR [INDEPENDENT_DIR]]]
#
# Default: the shipped checkpoints. The lead reruns it with the session-9 drafts as
#   drafts/bench/results/2026-12-02-s9/offline/run.sh runs/s9-moa runs/s9-eagle
# (-> offline-horizon-s9-moa-sharegpt-45x3x32.json: the tag is the MoA directory's name).
# Env: LIMIT (prompts, default 45), TAG (JSON name part, default "shipped", or MOA_DIR's name when
# given), INT8_DIR (where the int8 variants are derived, default /tmp/offline-int8-$TAG), CORE (default 0).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s9/offline
C=drafts/checkpoints/smollm2-135m-instruct
MOA=${1:-$C/moa}; EAGLE=${2:-$C/eagle}; INDEPENDENT=${3:-$C/independent}
DEFAULT_TAG=shipped; [ $# -gt 0 ] && DEFAULT_TAG=$(basename "$1")
L=${LIMIT:-45}; TAG=${TAG:-$DEFAULT_TAG}; Q=${INT8_DIR:-/tmp/offline-int8-$TAG}; CORE=${CORE:-0}
ARGS=()
for pair in "moa=$MOA" "eagle=$EAGLE" "independent=$INDEPENDENT"; do
  name=${pair%%=*}; dir=${pair#*=}
  taskset -c "$CORE" python3 -m drafts.neural.derive --from "$dir" --out "$Q/$name" --int8
  ARGS+=(--checkpoint "$name=$dir" --checkpoint "$name-int8=$Q/$name")
done
taskset -c "$CORE" moa-bench --offline-horizon 8,16,32 --cuts 8,32,64 --dataset sharegpt-heldout --limit "$L" \
  --method moa,eagle,independent,moa-int8,eagle-int8,independent-int8,target --threads 1 "${ARGS[@]}" \
  --json "$R/offline-horizon-$TAG-sharegpt-${L}x3x32.json" | tee "$R/offline-horizon-$TAG-sharegpt-${L}x3x32.txt"
