#!/usr/bin/env bash
# Session 4: the 1M-token EAGLE base and its two fine-tunes (fixed vs regenerated responses),
# interleaved per prompt against ar in one run per dataset. 2 threads, nothing else running.
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-01-s4
drafts=(--checkpoint eagle-1M=runs/base1M/eagle --checkpoint eagle-fixed=runs/eagle-short800-fixed
        --checkpoint eagle-regen=runs/eagle-short800-regen --method ar,eagle-1M,eagle-fixed,eagle-regen)
moa-bench --threads 2 "${drafts[@]}" --dataset sharegpt-heldout --limit 16 --max-new-tokens 96 --chain 4 \
  --json $R/fixed-vs-regen-sharegpt-t0-chain4-16x96.json
moa-bench --threads 2 "${drafts[@]}" --dataset humaneval --limit 8 --max-new-tokens 96 --chain 4 \
  --json $R/fixed-vs-regen-humaneval-t0-chain4-8x96.json
