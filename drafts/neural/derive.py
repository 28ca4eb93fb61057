"""``python -m drafts.neural.derive``: write a cheaper variant of a trained draft checkpoint.

    python -m drafts.neural.derive --from drafts/checkpoints/smollm2-135m-instruct/moa \\
        --out runs/moa-v8k-int8 --draft-vocab 8192 --int8

``--draft-vocab N`` keeps the N draft-vocabulary rows the target emits most often
(:mod:`drafts.neural.vocab_prune`; the weights are copied unchanged, only ``d2t`` shrinks);
``--int8`` records ``"inference": {"quantize": "int8-dynamic"}`` in config.json, which
:func:`drafts.neural.checkpoint.load_draft` applies at load (:mod:`drafts.neural.quantize`).
The result is an ordinary checkpoint directory: ``moa-bench --checkpoint moa-v8k=DIR --method
moa,moa-v8k`` compares it with the original in one interleaved run, and the engines load it by path.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from drafts.errors import MoaError
from drafts.neural.checkpoint import CONFIG_FILE, WEIGHTS_FILE, read_meta
from drafts.neural.quantize import INT8
from drafts.neural.vocab_prune import answer_texts, prune, rank_rows, token_counts
from drafts.target.runner import TargetRunner

TARGET_ANSWERS = Path(__file__).resolve().parents[1] / "data" / "generated" / "smollm2-answers.jsonl.gz"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m drafts.neural.derive", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--from", dest="source", type=Path, required=True, help="the trained checkpoint directory")
    p.add_argument("--out", type=Path, required=True, help="where to write the variant (a new directory)")
    p.add_argument("--draft-vocab", type=int, default=0, help="keep the N most frequent rows (default 0: all)")
    p.add_argument("--int8", action="store_true", help="load with int8 dynamically quantized Linear layers and head")
    p.add_argument(
        "--rank-data",
        type=Path,
        default=TARGET_ANSWERS,
        help="the target's own answers (regenerator .jsonl[.gz]) that rank the rows",
    )
    p.add_argument(
        "--sharegpt",
        type=int,
        default=2000,
        help="ShareGPT training conversations whose answers break ties (default 2000; 0: none)",
    )
    p.add_argument("--target", default=None, help="the target whose tokenizer counts tokens (default smollm2)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        meta = read_meta(args.source)
        tensors = load_file(str(args.source / WEIGHTS_FILE))
        derived: dict[str, Any] = {"from": str(args.source)}
        if args.draft_vocab:
            tensors["d2t"], ranking = pruned_d2t(tensors["d2t"], _tokenizing_runner(args.target), args)
            derived |= {"draft_vocab": int(tensors["d2t"].numel()), "ranked_on": ranking}
            meta["draft_vocab"] = int(tensors["d2t"].numel())
        if args.int8:
            meta["inference"] = {"quantize": INT8}
        meta["derived"] = derived
        args.out.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(args.out / WEIGHTS_FILE))
        (args.out / CONFIG_FILE).write_text(json.dumps(meta, indent=2))
    except MoaError as exc:
        print(f"derive: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} (draft vocabulary {meta['draft_vocab']}{', int8' if args.int8 else ''})")
    return 0


def pruned_d2t(
    d2t: torch.Tensor, runner: TargetRunner, args: argparse.Namespace
) -> tuple[torch.Tensor, dict[str, Any]]:
    """The kept rows' d2t (ranked with ``runner``'s tokenizer and stop ids) and a record of what ranked them."""
    from drafts.data.sharegpt import load_sharegpt

    vocab = int(runner.config.vocab_size)
    primary = token_counts(runner.tokenizer, answer_texts(args.rank_data), vocab)
    conversations = load_sharegpt("train")[: args.sharegpt] if args.sharegpt else []
    replies = (t.content for c in conversations for t in c.turns if t.role == "assistant")
    secondary = token_counts(runner.tokenizer, replies, vocab)
    ranking = rank_rows(d2t, primary, secondary, runner.stop_ids)
    record = {
        "target_answers": str(args.rank_data),
        "target_answer_tokens": int(primary.sum()),
        "sharegpt_train_conversations": len(conversations),
        "sharegpt_answer_tokens": int(secondary.sum()),
    }
    return prune(d2t, ranking, args.draft_vocab), record


def _tokenizing_runner(target: str | None) -> TargetRunner:
    from drafts.target.loading import load_target

    return TargetRunner(load_target(target, torch.device("cpu"), torch.float32))


if __name__ == "__main__":
    raise SystemExit(main())
