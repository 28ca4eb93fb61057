#!/usr/bin/env bash
# The session loop, step 4 (session 18 on): exact fp32 speed over `ar` on this CPU with a candidate MoA against the
# shipped one, both int8 (as the app drafts on a CPU), at the CPU default tree 3,4,8; session 12's cpu_speed.py
# (methods take turns per prompt, CPU-time ratios; sharegpt-heldout 16 x 96, T=0). One thread on core 1.
#   NEW=moa19=DIR OLD=moa18=DIR OUT=drafts/bench/results/DATE-sN/cpu-speed drafts/bench/results/loop/cpu_speed.sh
# (DIR: a trained MoA folder, e.g. a session's candidates/moa) -> OUT/speed-TAG.{json,txt} (TAG: default NEW's name)
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
: "${NEW:?NEW=NAME=DIR}" "${OLD:?OLD=NAME=DIR}" "${OUT:?OUT is the results folder}"
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
drafts=() methods=()
for spec in "$NEW" "$OLD"; do
  name=${spec%%=*}-int8
  python3 -m drafts.neural.derive --from "${spec#*=}" --out runs/cpu-speed/$name --int8
  drafts+=(--draft $name=runs/cpu-speed/$name) methods+=($name:3,4,8)
done
mkdir -p "$OUT"
TAG=${TAG:-${NEW%%=*}}
taskset -c 1 python3 drafts/bench/results/2026-12-02-s12/cpu-speed/cpu_speed.py "${drafts[@]}" --limit 16 \
  --methods "${methods[@]}" --json "$OUT/speed-$TAG.json" | tee "$OUT/speed-$TAG.txt"
