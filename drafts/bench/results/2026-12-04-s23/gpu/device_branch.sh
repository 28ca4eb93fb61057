#!/usr/bin/env bash
# Session 23: the tree a device call sends is this checkout's tracked (and untracked, not ignored) files,
# at most 64 MiB with what it carries; main's is ~200 MiB (every session's candidate drafts). This checks
# out a local branch, gpu-run, that drops drafts/bench/results (this folder and session 7's gpu/ kept),
# drafts/checkpoints and the answers' .gz (they travel as carry instead: prepare_calls.py), ~2 MiB in all.
#   drafts/bench/results/2026-12-04-s23/gpu/device_branch.sh         # before prepare.sh and the calls
#   drafts/bench/results/2026-12-04-s23/gpu/device_branch.sh --back  # after them: main again, gpu-run deleted
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
if [ "${1:-}" = --back ]; then
  git checkout -q main && git branch -q -D gpu-run && git status --short | head
  exit 0
fi
[ -z "$(git status --porcelain)" ] || { echo "device_branch: commit or stash first (the tree must be main's)"; exit 1; }
git checkout -q -B gpu-run main
keep="drafts/bench/results/\(2026-12-04-s23\|2026-12-02-s7\)/gpu/[^/]*$"  # their scripts (prepare_calls.py: GPU_SCRIPTS)
git ls-files drafts/bench/results drafts/checkpoints 'drafts/data/generated/*.gz' | grep -v "^$keep" \
  | xargs git rm -q --
git commit -q -m "gpu-run: the source alone, for the device calls (never pushed)"
echo "device_branch: on gpu-run, $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes tracked"
