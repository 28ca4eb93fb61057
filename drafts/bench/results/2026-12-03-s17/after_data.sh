#!/usr/bin/env bash
# Session 17: once both data generators have stopped (PIDs in runs/a.pid, runs/b.pid), check that the committed
# 5,067 conversations are untouched, append generator B's conversations to runs/answers.jsonl, write the NEW
# conversations only (line 5,068 on) to runs/s18_answers.jsonl, and start the s18 continuation of the shipped
# drafts on them (next_training.sh takes runs/RUN_answers.jsonl when it exists), MoA on core 1, EAGLE on core 0.
#   nohup drafts/bench/results/2026-12-03-s17/after_data.sh > runs/after_data.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
for pid in $(cat runs/a.pid runs/b.pid); do while kill -0 "$pid" 2>/dev/null; do sleep 10; done; done
echo "generators done $(date -u +%H:%M)"
want=$(gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz | md5sum)
have=$(sed -n 1,5067p runs/answers.jsonl | md5sum)
[ "$want" = "$have" ] || { echo "the first 5,067 lines changed: stop"; exit 1; }
cat runs/answers-b.jsonl >> runs/answers.jsonl
sed -n '5068,$p' runs/answers.jsonl > runs/s18_answers.jsonl
echo "answers: $(wc -l < runs/answers.jsonl) lines, s18 trains on $(wc -l < runs/s18_answers.jsonl) new ones"
RUN=s18 SEED=18 TOKENS=${TOKENS:-450000} nohup taskset -c 1 drafts/bench/results/2026-12-02-s10/next_training.sh > runs/s18.log 2>&1 &
sleep 60  # both trainers started on core 1: give EAGLE core 0
taskset -acp 0 "$(pgrep -f 'moa-train --draft eagle')"
echo "s18 started $(date -u +%H:%M)"
