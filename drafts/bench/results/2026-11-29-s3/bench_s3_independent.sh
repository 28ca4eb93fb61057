#!/usr/bin/env bash
# The independent draft at 2.4M tokens, same prompts as the main sharegpt chain-4 run.
set -u
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_WAIT_POLICY=PASSIVE
R=drafts/bench/results/2026-11-29-s3
CK="--checkpoint independent=runs/smollm2-independent-2p4M"
run() { name=$1; shift; [ -f $R/$name.json ] && return; echo "moa-bench --threads 2 $CK $* --json $R/$name.json" >> $R/commands.txt; moa-bench --threads 2 $CK "$@" --json $R/$name.json > $R/$name.txt 2> runs/bench-$name.err; }
run independent-sharegpt-t0-chain4-20x128 --method ar,independent --dataset sharegpt-heldout --limit 20 --max-new-tokens 128 --chain 4
echo done > $R/INDEPENDENT_DONE
