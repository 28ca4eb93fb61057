#!/bin/bash
# before/after the Python-overhead commit (3e9c14f): base = git archive of da3c773's drafts/ in /tmp/hstep/base
R=/work/main/drafts/bench/results/2026-12-01-s6/draft_step/overhead-ab
mkdir -p $R
ARGS="--method moa,eagle,independent --dataset humaneval --prompts 2 --rounds 6 --coverage-prompts 0 --threads 1"
for i in 1 2 3; do
  (cd /tmp/hstep/base && taskset -c 0 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PYTHONPATH=/tmp/hstep/base python3 -m drafts.bench.draft_step $ARGS --json $R/before-$i.json)
  (cd /work/main && taskset -c 0 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python3 -m drafts.bench.draft_step $ARGS --json $R/after-$i.json)
done
