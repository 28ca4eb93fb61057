"""The conversations of a ShareGPT-style JSONL whose first user turn is at most MAX tokens long.

llama.cpp evaluates prompts at ~160 tok/s on these 2 cores, so regenerating answers to long
questions costs most of the time; the fixed-vs-regenerated comparison uses the same subset for
both arms, so choosing short questions does not favour either.
Usage: python short_first_turns.py IN.jsonl MAX N OUT.jsonl
"""

import json
import sys

from llama_cpp import Llama

from drafts.locations import smollm2_gguf


def main(src: str, max_tokens: int, n: int, out: str) -> None:
    vocab = Llama(model_path=str(smollm2_gguf()), vocab_only=True, verbose=False)
    kept = 0
    with open(src) as f, open(out, "w") as dst:
        for line in f:
            row = json.loads(line)
            first = next(t["value"] for t in row["conversations"] if t["from"] == "human")
            if len(vocab.tokenize(first.encode("utf-8"), add_bos=False)) <= max_tokens:
                dst.write(line)
                kept += 1
                if kept == n:
                    break
    print(kept, "conversations written to", out)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
