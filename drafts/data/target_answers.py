"""Training answers from the exact target: ShareGPT questions answered by the benchmark's own model.

The draft learns to predict the target's next tokens, and the target's own answers gave twice
the gain of ShareGPT's fixed ones for the same tokens (issue 12). :mod:`drafts.data.regenerate`
answers through llama.cpp: a quantised model that is not the target, one sequence at a time.
This module answers with the model ``moa-bench`` verifies with (transformers, fp32, the same
weights: :func:`drafts.target.loading.load_target`), ``batch_size`` sequences at once through
:func:`drafts.data.batch_decode.decode_batch`.

Each conversation of the ShareGPT **train** split (never the held-out 200), in a seeded shuffled
order, keeps its system turn and its first ``max_user_turns`` user turns; the target answers
every user turn given the history it has itself produced (multi-turn continuations). A seeded
share of the conversations is answered at ``sampled_temperature``, the rest greedily.

Everything is sized to the training window (``moa-train --max-len``, ``context``): a prompt
leaves at least ``min_answer_tokens`` of room (a too long user turn is cut, as the llama.cpp
regenerator does), a reply never runs past the window, and a later turn is asked only while
the history leaves room, since tokens past the window are never trained on.

Pending prompts are sorted by length and batched with their neighbours (less padding); a
continuation goes back into the pending pool with its longer prompt. The output is the
regenerator's JSONL (one conversation per line, flushed; ``moa-train --data FILE`` reads it);
a rerun skips the ids already written, so an interrupted job resumes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import signal
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from drafts.data.batch_decode import Row, decode_batch
from drafts.data.conversations import Conversation, Turn
from drafts.data.regenerate import MIN_USER_TOKENS, conversation_record, written_ids
from drafts.errors import ConfigError, MoaError
from drafts.target.chat import format_chat

SOURCE = "transformers-fp32"
_taken = (
    itertools.count()
)  # the order in which jobs are taken up  # recorded with every conversation: which generator answered it


@dataclass(frozen=True)
class AnswerConfig:
    batch_size: int = 64  # sequences decoded at once
    max_new_tokens: int = 256  # per reply, before the window's own limit
    context: int = 512  # the training window (moa-train --max-len): prompt + reply stay inside it
    min_answer_tokens: int = 64  # room a prompt must leave for its reply
    max_user_turns: int = 2  # user turns answered per conversation (later ones: continuations)
    sampled_share: float = 0.25  # share of conversations answered at sampled_temperature
    sampled_temperature: float = 1.0
    seed: int = 0  # the conversation order, which ones are sampled, the sampling draws
    lookahead: int = 4  # batches' worth of pending prompts sorted by length together

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.max_new_tokens < 1 or self.max_user_turns < 1 or self.lookahead < 1:
            raise ConfigError("batch_size, max_new_tokens, max_user_turns and lookahead must be >= 1")
        if not 0 < self.min_answer_tokens < self.context:
            raise ConfigError(f"min_answer_tokens must be in (0, context={self.context}), not {self.min_answer_tokens}")
        if not 0.0 <= self.sampled_share <= 1.0 or self.sampled_temperature <= 0:
            raise ConfigError("sampled_share must be in [0, 1] and sampled_temperature > 0")


@dataclass
class Job:
    """A conversation being answered: its history so far, its next prompt, its remaining questions."""

    conv: Conversation
    temperature: float
    history: tuple[Turn, ...]
    questions: list[Turn]
    order: int = 0  # when the conversation was taken up: the oldest job is always in the next batch
    prompt: list[int] = field(default_factory=list)  # the token ids of history + next question
    asked: tuple[Turn, ...] = ()  # history + the (possibly cut) question the prompt renders


@dataclass
class Progress:
    """Running totals, logged after every batch."""

    started: float = field(default_factory=time.perf_counter)
    cpu_started: float = field(default_factory=time.process_time)  # CPU time: the fair rate on a shared core
    conversations: int = 0
    batches: int = 0
    prompt_tokens: int = 0
    new_tokens: int = 0

    def rate(self) -> float:
        """New tokens per wall-clock second."""
        return self.new_tokens / max(1e-9, time.perf_counter() - self.started)

    def cpu_rate(self) -> float:
        """New tokens per second of this process's CPU time (what it would do with a core to itself)."""
        return self.new_tokens / max(1e-9, time.process_time() - self.cpu_started)


Log = Callable[[str], None]


def answer_conversations(
    conversations: Iterable[Conversation],
    out_path: Path,
    model: Any,
    tokenizer: Any,
    stop_ids: frozenset[int],
    cfg: AnswerConfig,
    *,
    deadline: float | None = None,
    log: Log = lambda line: print(line, file=sys.stderr, flush=True),
) -> Progress:
    """Answer every conversation not yet in ``out_path``; append each finished one as a JSON line.

    ``deadline`` (a ``time.time()``) stops the job between batches. Conversations in flight
    (answered in part) are then written as they stand, as they are when the job is stopped with
    SIGTERM (:func:`main` turns it into ``SystemExit``); a rerun skips them.
    """
    done = written_ids(out_path)
    source = (conv for conv in conversations if conv.id not in done)
    pending: list[Job] = []
    taken = itertools.count()  # the order in which conversations are taken up
    progress = Progress()
    pad_id = getattr(tokenizer, "pad_token_id", None) or 0
    with out_path.open("a", encoding="utf-8") as out:
        try:
            while True:
                _refill(pending, source, tokenizer, cfg, taken)
                if not pending or (deadline is not None and time.time() >= deadline):
                    break
                batch = _take_batch(pending, cfg.batch_size)
                t0, n_prompt = time.perf_counter(), sum(len(job.prompt) for job in batch)
                replies = _answer(batch, model, stop_ids, pad_id, cfg)
                n_new = sum(len(reply) for reply in replies)
                progress.batches += 1
                progress.prompt_tokens += n_prompt
                progress.new_tokens += n_new
                for job, reply in zip(batch, replies, strict=True):
                    if _advance(job, reply, tokenizer, cfg):
                        pending.append(job)
                    else:
                        progress.conversations += _write(out, job)
                log(_batch_line(progress, batch, n_prompt, n_new, time.perf_counter() - t0, len(done)))
        finally:  # at the deadline or on SIGTERM: keep the answers of conversations still in flight
            for job in pending:
                progress.conversations += _write(out, job)
    return progress


def _answer(batch: list[Job], model: Any, stop_ids: frozenset[int], pad_id: int, cfg: AnswerConfig) -> list[list[int]]:
    rows = [Row(job.prompt, _budget(job, cfg), job.temperature) for job in batch]
    device = next(model.parameters()).device  # sampling draws where the probabilities are (a CUDA target too)
    generator = torch.Generator(device=device).manual_seed(_batch_seed(cfg.seed, batch))
    return decode_batch(model, rows, stop_ids, pad_id=pad_id, generator=generator)


def _refill(
    pending: list[Job], source: Iterator[Conversation], tokenizer: Any, cfg: AnswerConfig, taken: Iterator[int]
) -> None:
    """Top ``pending`` up to ``lookahead`` batches with the next conversations whose first turn fits."""
    while len(pending) < cfg.batch_size * cfg.lookahead:
        conv = next(source, None)
        if conv is None:
            return
        job = _new_job(conv, cfg)
        job.order = next(taken)
        if job.questions and _prepare(job, tokenizer, cfg):
            pending.append(job)


def _new_job(conv: Conversation, cfg: AnswerConfig) -> Job:
    system = tuple(turn for turn in conv.turns[:1] if turn.role == "system")
    questions = [turn for turn in conv.turns if turn.role == "user"][: cfg.max_user_turns]
    sampled = random.Random(f"{cfg.seed}:{conv.id}").random() < cfg.sampled_share
    return Job(conv, cfg.sampled_temperature if sampled else 0.0, system, questions)


def _prepare(job: Job, tokenizer: Any, cfg: AnswerConfig) -> bool:
    """Render the next question's prompt (cutting a long question); False when it cannot fit."""
    question = job.questions[0]
    budget = cfg.context - cfg.min_answer_tokens
    for _ in range(4):  # re-tokenising a cut text can shift a token or two: re-check
        asked = (*job.history, question)
        prompt = format_chat(tokenizer, asked)
        excess = len(prompt) - budget
        if excess <= 0:
            job.prompt, job.asked = prompt, asked
            return True
        question_ids = tokenizer.encode(question.content, add_special_tokens=False)
        keep = len(question_ids) - excess - 4
        if keep < MIN_USER_TOKENS:
            return False
        question = Turn("user", tokenizer.decode(question_ids[:keep], skip_special_tokens=True))
    return False


def _advance(job: Job, reply: list[int], tokenizer: Any, cfg: AnswerConfig) -> bool:
    """Add the reply to the history; True when the job has a next question that fits."""
    text = tokenizer.decode(reply, skip_special_tokens=True)
    job.history = (*job.asked, Turn("assistant", text))
    job.questions = job.questions[1:]
    return bool(job.questions) and _prepare(job, tokenizer, cfg)


def _budget(job: Job, cfg: AnswerConfig) -> int:
    return max(1, min(cfg.max_new_tokens, cfg.context - len(job.prompt)))


def _take_batch(pending: list[Job], size: int) -> list[Job]:
    """The oldest pending job and the ``size - 1`` jobs whose prompts are nearest its length.

    Serving the oldest first finishes conversations (a continuation keeps its conversation's
    age) and never starves a long prompt; batching by length keeps the padding small.
    """
    oldest = min(pending, key=lambda job: job.order)
    pending.sort(key=lambda job: (abs(len(job.prompt) - len(oldest.prompt)), job.order))
    batch = pending[:size]
    del pending[:size]
    return batch


def _batch_seed(seed: int, batch: list[Job]) -> int:
    """A seed fixed by the run's seed and the batch's content, so a batch draws the same on a rerun."""
    key = f"{seed}|" + "|".join(f"{job.conv.id}:{len(job.history)}" for job in batch)
    return zlib.crc32(key.encode())


def _write(out: Any, job: Job) -> int:
    """Append the job's conversation if it holds an answer; how many were written (0 or 1)."""
    if not any(turn.role == "assistant" for turn in job.history):
        return 0
    record = conversation_record(job.conv.id, job.history, job.temperature) | {"source": SOURCE}
    out.write(json.dumps(record, ensure_ascii=False) + "\n")
    out.flush()
    return 1


def _batch_line(progress: Progress, batch: list[Job], n_prompt: int, n_new: int, seconds: float, resumed: int) -> str:
    sampled = sum(job.temperature > 0 for job in batch)
    prompt = n_prompt // len(batch)
    return (
        f"{time.strftime('%H:%M:%S')} batch {progress.batches}: {len(batch)} seqs ({sampled} sampled), "
        f"prompt ~{prompt} tok, {n_new} new tokens in {seconds:.1f} s = {n_new / max(1e-9, seconds):.1f} tok/s | "
        f"total {progress.new_tokens:,} new tokens, {progress.rate():.1f} tok/s, {progress.cpu_rate():.1f} tok/CPU-s, "
        f"{progress.conversations} conversations written (+{resumed} before)"
    )


def shuffled(conversations: list[Conversation], seed: int) -> list[Conversation]:
    """The conversations in a seeded order (the same on every run, so a resumed run continues it)."""
    order = list(conversations)
    random.Random(seed).shuffle(order)
    return order


def write_prompts(path: Path, conversations: Iterable[Conversation]) -> int:
    """Write ``conversations`` (from :func:`shuffled` train-split ones) as ``--prompts`` JSONL; returns the count.

    For a machine without the ShareGPT package (a GPU machine): only the turns the generator reads
    travel (the system turn and the user turns), in the order given.
    """
    count = 0
    with path.open("w", encoding="utf-8") as file:
        for conv in conversations:
            turns = [[turn.role, turn.content] for turn in conv.turns if turn.role in ("system", "user")]
            file.write(json.dumps({"id": conv.id, "turns": turns}, ensure_ascii=False) + "\n")
            count += 1
    return count


def read_prompts(path: Path) -> list[Conversation]:
    """The conversations of a :func:`write_prompts` file, in its order."""
    if not path.is_file():
        raise ConfigError(f"--prompts {path} does not exist; write one with drafts.data.target_answers.write_prompts")
    with path.open(encoding="utf-8") as file:
        rows = [json.loads(line) for line in file if line.strip()]
    return [Conversation(str(row["id"]), tuple(Turn(role, text) for role, text in row["turns"])) for row in rows]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cfg = AnswerConfig(
            batch_size=args.batch_size,
            max_new_tokens=args.max_new_tokens,
            context=args.context,
            min_answer_tokens=args.min_answer_tokens,
            max_user_turns=args.max_user_turns,
            sampled_share=args.sampled_share,
            sampled_temperature=args.temperature,
            seed=args.seed,
        )
        return _run(args, cfg)
    except MoaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, cfg: AnswerConfig) -> int:
    from drafts.data.sharegpt import load_sharegpt
    from drafts.target.chat import stop_token_ids
    from drafts.target.device import resolve_device
    from drafts.target.loading import load_target

    torch.set_num_threads(args.threads)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # runs the writer's finally
    if args.prompts is None:
        conversations = shuffled(load_sharegpt("train"), cfg.seed)[: args.limit]  # never the held-out split
    else:
        conversations = read_prompts(args.prompts)[: args.limit]
    loaded = load_target(args.target, resolve_device(args.device), torch.float32)
    stop_ids = stop_token_ids(loaded.tokenizer, loaded.model.generation_config.eos_token_id)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    deadline = None if args.max_minutes is None else time.time() + 60 * args.max_minutes
    print(f"target_answers: {loaded.fingerprint.name} fp32, {args.threads} threads, {cfg}", file=sys.stderr)
    progress = answer_conversations(
        conversations, args.out, loaded.model, loaded.tokenizer, stop_ids, cfg, deadline=deadline
    )
    print(
        f"target_answers: done: {progress.conversations} conversations, {progress.new_tokens:,} new tokens "
        f"({progress.prompt_tokens:,} prompt tokens) at {progress.rate():.1f} tok/s, "
        f"{progress.cpu_rate():.1f} tok/CPU-s; in {args.out}",
        file=sys.stderr,
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m drafts.data.target_answers",
        description="Answer ShareGPT train-split questions with the exact target, batched (training data).",
    )
    p.add_argument("--out", type=Path, required=True, help="JSONL output; an existing file is resumed")
    p.add_argument("--target", default=None, help="smollm2 (default) | gemma3-270m | DIR | FILE.gguf")
    p.add_argument("--limit", type=int, default=None, help="the first N conversations of the shuffled train split")
    p.add_argument(
        "--prompts",
        type=Path,
        default=None,
        help="JSONL of train-split conversations (write_prompts) answered in its order, in place of\n"
        "the shuffled ShareGPT train split (a machine without the ShareGPT package)",
    )
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--context", type=int, default=512, help="training window (moa-train --max-len)")
    p.add_argument("--min-answer-tokens", type=int, default=64)
    p.add_argument("--max-user-turns", type=int, default=2)
    p.add_argument("--sampled-share", type=float, default=0.25, help="share of conversations sampled (not greedy)")
    p.add_argument("--temperature", type=float, default=1.0, help="temperature of the sampled share")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-minutes", type=float, default=None, help="stop (between batches) after this long")
    p.add_argument("--device", default="cpu")
    return p


if __name__ == "__main__":
    sys.exit(main())
