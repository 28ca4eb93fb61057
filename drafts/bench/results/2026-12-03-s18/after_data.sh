#!/usr/bin/env bash
# Session 18: once both data generators have stopped (PIDs in runs/a.pid, runs/b.pid), check that the committed
# 6,378 conversations are untouched, append generator B's NEW conversations (it resumed positions 7,067-9,066 with
# runs/answers-b.jsonl holding session 17's 669, line 670 on) to runs/answers.jsonl, write the new conversations
# only (line 6,379 on) to runs/s19_answers.jsonl, and start the s19 continuation of the shipped drafts on them
# (~one pass: 450k tokens per 1,311 conversations, as s18), MoA on core 1, EAGLE on core 0.
#   nohup drafts/bench/results/2026-12-03-s18/after_data.sh > runs/after_data.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
for pid in $(cat runs/a.pid runs/b.pid); do while kill -0 "$pid" 2>/dev/null; do sleep 10; done; done
echo "generators done $(date -u +%H:%M)"
want=$(gunzip -c drafts/data/generated/smollm2-answers.jsonl.gz | md5sum)
have=$(sed -n 1,6378p runs/answers.jsonl | md5sum)
[ "$want" = "$have" ] || { echo "the first 6,378 lines changed: stop"; exit 1; }
[ "$(sed -n 1,669p runs/answers-b.jsonl | md5sum)" = "$(sed -n 5710,6378p runs/answers.jsonl | md5sum)" ] \
  || { echo "generator B's first 669 lines are not lines 5,710-6,378: stop"; exit 1; }
sed -n '670,$p' runs/answers-b.jsonl >> runs/answers.jsonl
sed -n '6379,$p' runs/answers.jsonl > runs/s19_answers.jsonl
new=$(wc -l < runs/s19_answers.jsonl)
tokens=${TOKENS:-$(( 450000 * new / 1311 ))}
echo "answers: $(wc -l < runs/answers.jsonl) lines, s19 trains $tokens tokens on $new new ones"
RUN=s19 SEED=19 TOKENS=$tokens nohup taskset -c 1 drafts/bench/results/2026-12-02-s10/next_training.sh > runs/s19.log 2>&1 &
sleep 60  # both trainers started on core 1: give EAGLE core 0
taskset -acp 0 "$(pgrep -f 'moa-train --draft eagle')"
echo "s19 started $(date -u +%H:%M)"
