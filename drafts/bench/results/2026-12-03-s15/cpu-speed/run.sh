#!/usr/bin/env bash
# Session 15: exact fp32 speed over `ar` on this CPU with the shipped session-15 MoA (int8, as the app drafts on a
# CPU) against the session-14 one, at the CPU default tree 3,4,8 and two near shapes; session 12's cpu_speed.py
# (methods take turns per prompt, CPU-time ratios; sharegpt-heldout 8 x 96, T=0). One thread on core 0; core 1
# ran the s16 training, so read the CPU-time ratios, not the wall clock.
set -euo pipefail
cd "$(dirname "$0")/../../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
unset OMP_WAIT_POLICY
R=drafts/bench/results/2026-12-03-s15/cpu-speed
S12=drafts/bench/results/2026-12-02-s12/cpu-speed
python3 -m drafts.neural.derive --from drafts/checkpoints/smollm2-135m-instruct/moa --out runs/s15-cpu/moa15-int8 --int8
python3 -m drafts.neural.derive --from runs/s14-moa --out runs/s15-cpu/moa14-int8 --int8  # = the s14 ship (675f55d)
taskset -c 0 python3 $S12/cpu_speed.py --draft moa15-int8=runs/s15-cpu/moa15-int8 --draft moa14-int8=runs/s15-cpu/moa14-int8 \
  --methods moa15-int8:3,4,8 moa14-int8:3,4,8 moa15-int8:4,4,10 moa15-int8:3,4,6 --json $R/speed-s15.json | tee $R/speed-s15.txt
# pass 2: the shapes again on 16 prompts, another order
taskset -c 0 python3 $S12/cpu_speed.py --draft moa15-int8=runs/s15-cpu/moa15-int8 --limit 16 \
  --methods moa15-int8:4,4,10 moa15-int8:3,4,8 moa15-int8:4,4,8 moa15-int8:3,4,6 --json $R/speed-s15-pass2.json | tee $R/speed-s15-pass2.txt
# both passes in one table
python3 $S12/cpu_speed_table.py $R/speed-s15.json $R/speed-s15-pass2.json | tee $R/speed-s15-table.txt
