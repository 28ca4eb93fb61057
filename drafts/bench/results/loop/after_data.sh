#!/usr/bin/env bash
# The session loop, step 2 (session 18 on): once both data generators have stopped (PIDs in runs/a.pid,
# runs/b.pid), check that the committed conversations are untouched at the head of runs/answers.jsonl, append
# generator B's conversations that runs/answers.jsonl lacks (matched by id, so a B that resumed an earlier stretch
# adds only its new ones), write the new conversations only to runs/RUN_answers.jsonl, and start RUN's continuation
# of the shipped drafts on them (one pass: 450k tokens per 1,311 conversations, session 17's rate, unless TOKENS
# says), MoA on core 1, EAGLE on core 0. FROM=N starts the new conversations at line N instead, to include lines
# committed but not yet trained on (loop/README.md says which).
#   RUN=s20 SEED=20 nohup drafts/bench/results/loop/after_data.sh > runs/after_data.log 2>&1 &
set -euo pipefail
cd "$(dirname "$0")/../../../.."  # the repository root
: "${RUN:?RUN=sN names the run}" "${SEED:?SEED sets the data order}"
# CI's .ci/run reinstalls the package editable from its own checkout (/check/...), which leaves `moa-train` unable
# to import drafts here (session 22 lost 5 min to it): check before waiting, not after.
(cd /tmp && moa-train --help > /dev/null 2>&1) \
  || { echo "moa-train does not start: run 'pip install -e . --no-deps' in this checkout, then rerun"; exit 1; }
for pid in $(cat runs/a.pid runs/b.pid); do while kill -0 "$pid" 2>/dev/null; do sleep 10; done; done
echo "generators done $(date -u +%H:%M)"
GZ=drafts/data/generated/smollm2-answers.jsonl.gz
keep=$(gunzip -c $GZ | wc -l)
[ "$(gunzip -c $GZ | md5sum)" = "$(sed -n "1,${keep}p" runs/answers.jsonl | md5sum)" ] \
  || { echo "the first $keep lines of runs/answers.jsonl are not the committed ones: stop"; exit 1; }
python3 - <<'PY'
import json
have = {json.loads(line)["id"] for line in open("runs/answers.jsonl")}
with open("runs/answers.jsonl", "a") as out:
    for line in open("runs/answers-b.jsonl"):
        if json.loads(line)["id"] not in have:
            out.write(line)
PY
sed -n "${FROM:-$((keep + 1))},\$p" runs/answers.jsonl > runs/${RUN}_answers.jsonl
new=$(wc -l < runs/${RUN}_answers.jsonl)
tokens=${TOKENS:-$(( 450000 * new / 1311 ))}
echo "answers: $(wc -l < runs/answers.jsonl) lines, $RUN trains $tokens tokens on $new new ones"
RUN=$RUN SEED=$SEED TOKENS=$tokens nohup taskset -c 1 drafts/bench/results/2026-12-02-s10/next_training.sh > runs/$RUN.log 2>&1 &
sleep 60  # both trainers started on core 1: give EAGLE core 0
taskset -acp 0 "$(pgrep -f 'moa-train --draft eagle')"
echo "$RUN started $(date -u +%H:%M)"
