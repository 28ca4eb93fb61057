#!/bin/sh
# Offline horizon (issue 12 item 7): tokens each method keeps writing alone after a cut, in-process, T=0.
# One line; pass --checkpoint moa=DIR --checkpoint eagle=DIR to measure newer drafts.
taskset -c 0 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 moa-bench --offline-horizon 8,16,32 --cuts 8,32,64 --dataset sharegpt-heldout --limit 20 --method moa,eagle,independent,gguf,target --threads 1 --json drafts/bench/results/2026-12-01-s6/offline/offline-horizon-sharegpt-20x3x32.json "$@"
