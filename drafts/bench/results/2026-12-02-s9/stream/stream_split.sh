#!/usr/bin/env bash
# Session 9 (lead): stream.sh again with the verifier on a core of its own, as on another machine:
# the client (and its draft) on core 0, moa-server on core 1 (`--server-cpus 1`), nothing else running.
# stream.sh ran both on one shared core, where every proposal the client drafted was taken from the
# verifier's time. Same flags otherwise (3 prompts x 64 tokens, T = 0, moa / moa-stream / api interleaved).
#   SHAPES="chain4 4,4,16" DATASETS="humaneval sharegpt-heldout" .../stream_split.sh
set -euo pipefail
SERVER_CPUS=1 NAME=split SHAPES=${SHAPES:-"chain4 4,4,16"} exec "$(dirname "$0")/stream.sh"
