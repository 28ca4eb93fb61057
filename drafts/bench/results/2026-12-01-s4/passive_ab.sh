#!/usr/bin/env bash
# Session 4: does OMP_WAIT_POLICY=PASSIVE (set in session 3's benchmark scripts) change the speed
# figures? The same short moa-bench run, once with and once without it, back to back.
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1
R=drafts/bench/results/2026-12-01-s4
args=(--threads 2 --method ar,moa,eagle,lookup --dataset sharegpt-heldout --limit 4 --max-new-tokens 64 --chain 4)
for round in 1 2; do
  OMP_WAIT_POLICY=PASSIVE moa-bench "${args[@]}" --json $R/omp-passive-$round.json
  env -u OMP_WAIT_POLICY moa-bench "${args[@]}" --json $R/omp-default-$round.json
done
