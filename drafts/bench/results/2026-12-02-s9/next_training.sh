#!/usr/bin/env bash
# Session 9 -> 10: the next continuation of MoA and EAGLE after session 9's, which (lr 2e-4 restarted, 500k tokens
# ~ half the conversations) gained nothing: half the rate, the first 2,673 conversations, from the shipped
# (then session-8) checkpoints, ONE feature cache for both kinds. Session 10 ran it with TOKENS=600000 and shipped
# the result. It is session 10's next_training.sh with these settings:
#   TOKENS=600000 nohup taskset -c 1 drafts/bench/results/2026-12-02-s9/next_training.sh > runs/s10.log 2>&1 &
set -euo pipefail
RUN=s10 LINES=2673 TOKENS=${TOKENS:-800000} exec "$(dirname "$0")/../2026-12-02-s10/next_training.sh"
