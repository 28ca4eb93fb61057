#!/bin/sh
# The remote engine's figures of session 5 (H-engine), SmolLM2-135M + the shipped MoA draft, on a shared,
# loaded 2-core AMD EPYC (a training job on the other core): tokens/s and ttft are not comparable across
# files; prompt tokens sent, bytes, round trips per 100 tokens and identity with ar are.
cd "$(dirname "$0")/../../../../.." || exit 1
B="python3 -m drafts.bench --remote --threads 1 --cut-tokens 0"
R=drafts/bench/results/2026-12-01-s5/remote-engine
$B --dataset sharegpt-heldout --turns 5 --link lan,4g --method moa,api --limit 3 --max-new-tokens 32 --json $R/chats-sharegpt-turns5-lan-4g.json
$B --dataset humaneval --link lan,4g --method moa --limit 3 --max-new-tokens 64 --json $R/humaneval-moa-chains-lan-4g.json
$B --dataset humaneval --link lan,4g --method moa --limit 3 --max-new-tokens 64 --tree 4,4,16 --json $R/humaneval-moa-tree4-4-16-lan-4g.json
# T = 1; the "dense q" file was made before commit f587feb (q sent on every link), the other after it
$B --dataset humaneval --link lan,4g,3g --method moa --limit 2 --max-new-tokens 32 --temperature 1 --seed 1 --json $R/t1-no-q-on-slow-links-lan-4g-3g.json
