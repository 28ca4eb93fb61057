"""Paired bootstrap of tau (tokens per round) between methods of one moa-bench JSON, per prompt.

    python3 paired.py RESULT.json old:new [old:new ...]

Prints each method's tau, the mean per-prompt difference new - old with a 95 % bootstrap interval, and on how
many prompts new is better. A prompt's tau is its round_tokens / rounds (methods['m']['per_prompt']).
"""

import json
import random
import sys


def per_prompt_tau(result: dict, method: str) -> list[float]:
    return [p["round_tokens"] / p["rounds"] for p in result["methods"][method]["per_prompt"]]


def bootstrap(diffs: list[float], draws: int = 10000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(draws))
    return means[int(0.025 * draws)], means[int(0.975 * draws)]


def main() -> None:
    with open(sys.argv[1]) as f:
        result = json.load(f)
    for pair in sys.argv[2:]:
        old, new = pair.split(":")
        a, b = per_prompt_tau(result, old), per_prompt_tau(result, new)
        diffs = [y - x for x, y in zip(a, b, strict=True)]
        lo, hi = bootstrap(diffs)
        better = sum(d > 0 for d in diffs)
        taus = f"{old} {result['methods'][old]['tau']:.3f}, {new} {result['methods'][new]['tau']:.3f}"
        mean = sum(diffs) / len(diffs)
        print(f"{taus}: per prompt {mean:+.3f} [{lo:+.3f}, {hi:+.3f}], better on {better}/{len(diffs)}")


if __name__ == "__main__":
    main()
