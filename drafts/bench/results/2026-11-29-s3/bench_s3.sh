#!/usr/bin/env bash
# Session 3 measurements of the 2.4M-token drafts (2 threads, nothing else running).
set -u
cd "$(dirname "$0")/../../../.."  # the repository root
export HF_HUB_OFFLINE=1 OMP_WAIT_POLICY=PASSIVE
R=drafts/bench/results/2026-11-29-s3
CK="--checkpoint moa=runs/smollm2-moa-2p4M --checkpoint eagle=runs/smollm2-eagle-2p4M"
run() { name=$1; shift; [ -f $R/$name.json ] && return; echo "moa-bench --threads 2 $CK $* --json $R/$name.json" >> $R/commands.txt; moa-bench --threads 2 $CK "$@" --json $R/$name.json > $R/$name.txt 2> runs/bench-$name.err; }
run drafts-sharegpt-t0-chain4-20x128 --method ar,moa,eagle,lookup --dataset sharegpt-heldout --limit 20 --max-new-tokens 128 --chain 4
run drafts-sharegpt-t0-tree-20x128 --method ar,moa,eagle --dataset sharegpt-heldout --limit 20 --max-new-tokens 128 --tree 4,4,16
run drafts-humaneval-t0-chain4 --method ar,moa,eagle,lookup --dataset humaneval --limit 8 --max-new-tokens 96 --chain 4
run drafts-sharegpt-t1-chain4 --method ar,moa,eagle --dataset sharegpt-heldout --limit 8 --max-new-tokens 96 --chain 4 --temperature 1
run bf16-sharegpt-t0-tree --method ar,moa,eagle,lookup --dataset sharegpt-heldout --limit 8 --max-new-tokens 96 --tree 4,4,16 --dtype bfloat16
run drafts-sharegpt-t0-chain6-conf015 --method ar,moa,eagle --dataset sharegpt-heldout --limit 8 --max-new-tokens 96 --chain 6 --confidence 0.15
echo done > $R/MAIN_DONE
