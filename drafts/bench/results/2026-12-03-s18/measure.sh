#!/usr/bin/env bash
# Session 18: once the s19 trainers have stopped (PIDs as arguments), keep the candidates, then measure them against
# the shipped drafts as session 16 measured s17: core 1 runs the tree on the standard 16 prompts, then chain 4;
# core 0 the tree on the next 24 prompts, then the draft-touching and packaging tests in a clone with the
# candidates in place of the shipped checkpoints (a ship needs both).
#   nohup drafts/bench/results/2026-12-03-s18/measure.sh PID PID > runs/measure.log 2>&1 &
set -uo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
ROOT=$(pwd)
for pid in "$@"; do while kill -0 "$pid" 2>/dev/null; do sleep 10; done; done
echo "trainers done $(date -u +%H:%M)"
O=drafts/bench/results/2026-12-03-s18/s19
for kind in moa eagle; do mkdir -p $O/candidates/$kind && cp runs/s19-$kind/config.json runs/s19-$kind/draft.safetensors $O/candidates/$kind/; done
B=drafts/bench/results/2026-12-02-s10/bench.sh
( OUT=$O RUN=s19 PART=tree TREE_LIMIT=16 taskset -c 1 $B > runs/s19-tree.log 2>&1
  echo "tree done $(date -u +%H:%M)"
  OUT=$O RUN=s19 PART=chain taskset -c 1 $B > runs/s19-chain.log 2>&1
  echo "chain done $(date -u +%H:%M)" ) &
( OUT=$O/confirm RUN=s19 taskset -c 0 drafts/bench/results/2026-12-03-s14/confirm/confirm_tree.sh > runs/s19-confirm.log 2>&1
  echo "confirm done $(date -u +%H:%M)"
  rm -rf /tmp/s19-clone && git clone -q . /tmp/s19-clone
  for kind in moa eagle; do cp $O/candidates/$kind/* /tmp/s19-clone/drafts/checkpoints/smollm2-135m-instruct/$kind/; done
  cd /tmp/s19-clone && export HF_HUB_OFFLINE=1
  taskset -c 0 python3 -m pytest -q -x tests/app/engine tests/drafts/neural tests/app/settings tests/app/demo \
    tests/drafts/bench/test_offline_horizon_smollm2.py tests/app/test_cli.py tests/drafts/training > $ROOT/runs/s19-tests.log 2>&1
  echo "tests rc $? $(date -u +%H:%M)"
  taskset -c 0 python3 -m pytest -q -m packaging tests/packaging > $ROOT/runs/s19-packaging.log 2>&1
  echo "packaging rc $? $(date -u +%H:%M)" ) &
wait
echo "all done $(date -u +%H:%M)"
