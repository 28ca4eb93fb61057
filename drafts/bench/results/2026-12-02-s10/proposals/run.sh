#!/usr/bin/env bash
# Session 10 (H3): speculative streaming's proposals, the lead (EngineConfig.stream_lead) against none.
# moa-bench --remote, SmolLM2-135M on a CPU moa-server behind the link shaper, the shipped MoA draft on the
# client, 3 prompts x 64 tokens at T = 0, methods interleaved per prompt: "moa-stream" (the engine's default
# lead, 0: proposals as deep as the shape, as session 9's proposer), "moa-stream+2", API streaming. (The files
# of this session ran METHODS="moa-stream+0,moa-stream,api" while the default was 2, or "...+0,...+2,api".) Server and
# client both on core 0 (one thread each), which other helpers' jobs shared: compare within one file, as ratios.
# Every file records each stream's proposal figures ("proposals": lag, applied share, accepted per step,
# draft ms against step ms; app.engine.proposal_tally). proposals_table.py *.json prints the README's table.
#   SHAPES="chain4 4,4,16" DATASETS="humaneval sharegpt-heldout" .../run.sh
# LINKS=lan LIMIT=2 NAME=lead-lan: a shorter run (the session's core was shared by ~10 jobs: load 11).
# SERVER_CPUS=1 NAME=split: moa-server on CPU 1 (`--server-cpus`), files split-*.json.
# It is session 9's stream.sh with this folder and these defaults.
set -euo pipefail
OUT=drafts/bench/results/2026-12-02-s10/proposals METHODS=${METHODS:-"moa-stream,moa-stream+2,api"} \
  NAME=${NAME:-lead} SHAPES=${SHAPES:-"chain4 4,4,16"} exec "$(dirname "$0")/../../2026-12-02-s9/stream/stream.sh"
