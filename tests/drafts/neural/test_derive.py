"""``python -m drafts.neural.derive``: cheaper variants of a checkpoint that load as ordinary ones."""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import torch

from drafts.neural.checkpoint import CONFIG_FILE, load_draft
from drafts.neural.derive import main, pruned_d2t
from drafts.neural.quantize import is_quantized
from drafts.training.checkpoint import save_draft
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner


def test_int8_is_recorded_in_the_variant_and_applied_when_it_loads(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    save_draft(tmp_path / "src", random_draft("eagle", runner, seed=1), runner.fingerprint, {"tokens": 1})

    assert main(["--from", str(tmp_path / "src"), "--out", str(tmp_path / "int8"), "--int8"]) == 0

    meta = json.loads((tmp_path / "int8" / CONFIG_FILE).read_text())
    assert meta["inference"] == {"quantize": "int8-dynamic"} and meta["derived"]["from"] == str(tmp_path / "src")
    assert is_quantized(load_draft(tmp_path / "int8", runner))


def test_a_pruned_vocabulary_keeps_the_target_answers_most_frequent_tokens(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0))
    answers = tmp_path / "answers.jsonl.gz"
    text = "abcabcab" + "xyz"  # a, b most frequent, then c
    row = {"id": "1", "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": text}]}
    with gzip.open(answers, "wt", encoding="utf-8") as file:
        file.write(json.dumps(row) + "\n")
    d2t = torch.arange(int(runner.config.vocab_size))
    args = argparse.Namespace(rank_data=answers, sharegpt=0, draft_vocab=len(runner.stop_ids) + 3)

    kept, record = pruned_d2t(d2t, runner, args)

    expected = set(runner.tokenizer.encode("abc", add_special_tokens=False)) | set(runner.stop_ids)
    assert set(kept.tolist()) == expected and kept.tolist() == sorted(kept.tolist())
    assert record["target_answer_tokens"] == len(runner.tokenizer.encode(text, add_special_tokens=False))
