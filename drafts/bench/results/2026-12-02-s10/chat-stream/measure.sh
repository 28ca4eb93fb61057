#!/usr/bin/env bash
# What a moa-chat user waits for with and without --stream: the demo (verifier on loopback behind the
# link shaper) at lan and 4g, 2 prompts x 64 tokens, T=0, modes in ABBA order so drift on the shared
# core hits both alike. Client AND verifier on core 0 (core 1 belongs to the training job): the
# verifier does not get a core of its own as in the s9 split runs, which streaming needs most.
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
OUT=drafts/bench/results/2026-12-02-s10/chat-stream
HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 taskset -c 0 python3 -m app.demo.measure \
  --modes demo,demo-stream,demo-stream,demo --presets lan,4g --prompts 2 --max-tokens 64 --device cpu \
  --json "$OUT/measure.json" | tee "$OUT/measure.txt"
