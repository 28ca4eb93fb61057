#!/usr/bin/env bash
# Session 18: exact fp32 speed over `ar` on this CPU with the s19 MoA (int8, as the app drafts on a CPU) against the
# s18 one (shipped in session 17), at the CPU default tree 3,4,8; session 12's cpu_speed.py (methods take turns per
# prompt, CPU-time ratios; sharegpt-heldout 16 x 96, T=0). One thread on core 1; core 0 ran tests meanwhile.
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-03-s18/cpu-speed
S12=drafts/bench/results/2026-12-02-s12/cpu-speed
python3 -m drafts.neural.derive --from drafts/bench/results/2026-12-03-s18/s19/candidates/moa --out runs/s18-cpu/moa19-int8 --int8
python3 -m drafts.neural.derive --from drafts/bench/results/2026-12-03-s17/s18/candidates/moa --out runs/s18-cpu/moa18-int8 --int8
taskset -c 1 python3 $S12/cpu_speed.py --draft moa19-int8=runs/s18-cpu/moa19-int8 --draft moa18-int8=runs/s18-cpu/moa18-int8 \
  --limit 16 --methods moa19-int8:3,4,8 moa18-int8:3,4,8 --json $R/speed-s19.json | tee $R/speed-s19.txt
