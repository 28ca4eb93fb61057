#!/usr/bin/env bash
# The session loop, step 3 (session 18 on): once RUN's trainers have stopped (PIDs as arguments), keep the
# candidates in OUT/candidates, then measure them against the shipped drafts: core 1 runs the tree 6,10,60 on the
# standard 16 prompts, then chain 4 on 30; core 0 the tree on the next 24, then the draft-touching and packaging
# tests in a clone with the candidates in place of the shipped checkpoints (a ship needs both). Logs: runs/RUN-*.log.
#   RUN=s20 OUT=drafts/bench/results/DATE-sN/s20 nohup drafts/bench/results/loop/measure.sh PID PID > runs/measure.log 2>&1 &
set -uo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
: "${RUN:?RUN=sN names the run}" "${OUT:?OUT is the results folder}"
ROOT=$(pwd)
for pid in "$@"; do while kill -0 "$pid" 2>/dev/null; do sleep 10; done; done
echo "trainers done $(date -u +%H:%M)"
for kind in moa eagle; do mkdir -p $OUT/candidates/$kind && cp runs/$RUN-$kind/config.json runs/$RUN-$kind/draft.safetensors $OUT/candidates/$kind/; done
B=drafts/bench/results/2026-12-02-s10/bench.sh
( OUT=$OUT RUN=$RUN PART=tree TREE_LIMIT=16 taskset -c 1 $B > runs/$RUN-tree.log 2>&1
  echo "tree done $(date -u +%H:%M)"
  OUT=$OUT RUN=$RUN PART=chain taskset -c 1 $B > runs/$RUN-chain.log 2>&1
  echo "chain done $(date -u +%H:%M)" ) &
( OUT=$OUT/confirm RUN=$RUN taskset -c 0 drafts/bench/results/2026-12-03-s14/confirm/confirm_tree.sh > runs/$RUN-confirm.log 2>&1
  echo "confirm done $(date -u +%H:%M)"
  clone=/tmp/$RUN-clone
  rm -rf $clone && git clone -q . $clone
  for kind in moa eagle; do cp $OUT/candidates/$kind/* $clone/drafts/checkpoints/smollm2-135m-instruct/$kind/; done
  cd $clone && export HF_HUB_OFFLINE=1
  taskset -c 0 python3 -m pytest -q -x tests/app/engine tests/drafts/neural tests/app/settings tests/app/demo \
    tests/drafts/bench/test_offline_horizon_smollm2.py tests/app/test_cli.py tests/drafts/training > $ROOT/runs/$RUN-tests.log 2>&1
  echo "tests rc $? $(date -u +%H:%M)"
  taskset -c 0 python3 -m pytest -q -m packaging tests/packaging > $ROOT/runs/$RUN-packaging.log 2>&1
  echo "packaging rc $? $(date -u +%H:%M)" ) &
wait
echo "all done $(date -u +%H:%M)"
