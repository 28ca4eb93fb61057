"""Sequence and loss-bearing (response) token counts of training files, as moa-train sees them
(SmolLM2's chat template, max length 512). Usage: python data_stats.py FILE.jsonl ..."""

import sys

from transformers import AutoTokenizer

from drafts.locations import converted_models_dir
from drafts.training.data import load_training_conversations
from drafts.training.tokenize import tokenize_all


def main(paths: list[str]) -> None:
    tokenizer = AutoTokenizer.from_pretrained(next(converted_models_dir().glob("SmolLM2-135M-Instruct*")))
    for path in paths:
        sequences = list(tokenize_all(tokenizer, load_training_conversations(path), 512))
        total = sum(len(s.ids) for s in sequences)
        loss = sum(int(s.loss_mask.sum()) for s in sequences)
        print(f"{path}: {len(sequences)} sequences, {total} tokens, {loss} response tokens")


if __name__ == "__main__":
    main(sys.argv[1:])
