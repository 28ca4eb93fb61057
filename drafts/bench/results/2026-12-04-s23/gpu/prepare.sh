#!/usr/bin/env bash
# Session 23 (session 7's prepare.sh, adapted), step 1, here on the CPU, on main (it reads the shipped
# drafts and answers), before device_branch.sh: write what the GPU machine needs into .gpu/ (ignored:
# .git/info/exclude), one folder per device call, and print the exact `run` tool calls.
#   taskset -c 0 drafts/bench/results/2026-12-04-s23/gpu/prepare.sh --new-from 12542
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo /.gpu/ >> .git/info/exclude; }
G=drafts/bench/results/2026-12-04-s23/gpu
python3 $G/prepare_calls.py "$@"
git check-ignore -q .gpu/call1 || { echo "prepare: .gpu is not ignored: it would travel twice" >&2; exit 1; }
calls=$(ls -d .gpu/call* | wc -l)
du -sh .gpu/call*
BUDGET=${BUDGET:-500}  # seconds device_run.sh may take in the last call (its run timeout_s is BUDGET + 60)
echo
echo "=== the device calls: make them back to back (the machine goes back after 30 s idle) ==="
for n in $(seq 1 $((calls - 1))); do
  echo "run(command=\"bash $G/device_run.sh --stash-only\", carry=[\".gpu/call$n\"], timeout_s=120)"
done
echo "run(command=\"bash $G/device_run.sh $BUDGET\", carry=[\".gpu/call$calls\"], timeout_s=$((BUDGET + 60)))"
echo "then: give_back()  (the files come back under files_at: moa/, eagle/, summary.json, run.log, logs.tar.gz, answers.jsonl.gz)"
