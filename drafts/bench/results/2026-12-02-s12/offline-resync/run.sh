#!/usr/bin/env bash
# Offline horizon with re-sync (session 12, issue 12's offline goal): beside kept@8/16/32 (the common prefix
# the repair keeps), the offline tokens kept when the tail after the first rejection serves as a lookup draft
# (drafts/decoding/resync.py, through drafts/bench/offline_resync.py; reference: 32 target tokens past the
# horizon). The shipped (session-11) drafts, fp32 and MoA int8; the first 45 sharegpt-heldout prompts that
# fit, cuts 8,32,64, T=0, one thread, no target-state diagnostic.
#
#   drafts/bench/results/2026-12-02-s12/offline-resync/run.sh
#
# Env: LIMIT (prompts, default 45), INT8_DIR (default /tmp/offline-int8-s12), CORE (default 0).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-02-s12/offline-resync
C=drafts/checkpoints/smollm2-135m-instruct
L=${LIMIT:-45}; Q=${INT8_DIR:-/tmp/offline-int8-s12}; CORE=${CORE:-0}
taskset -c "$CORE" python3 -m drafts.neural.derive --from "$C/moa" --out "$Q/moa" --int8
taskset -c "$CORE" moa-bench --offline-horizon 8,16,32 --cuts 8,32,64 --dataset sharegpt-heldout --limit "$L" \
  --method moa,eagle,independent,moa-int8 --no-target-state --threads 1 \
  --checkpoint "moa=$C/moa" --checkpoint "eagle=$C/eagle" --checkpoint "independent=$C/independent" \
  --checkpoint "moa-int8=$Q/moa" \
  --json "$R/offline-resync-shipped-sharegpt-${L}x3x32.json" | tee "$R/offline-resync-shipped-sharegpt-${L}x3x32.txt"
