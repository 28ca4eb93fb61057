"""Self-distilled training data: ShareGPT questions answered again by the target itself.

A draft is trained to predict the *target's* next tokens, so the assistant turns it learns from
should be the target's own words, not ChatGPT's (Medusa's self-distillation; EAGLE reports a
small gain from target-generated answers over the fixed ShareGPT ones). :func:`regenerate` keeps
each conversation's system turn and its first ``max_user_turns`` user turns, and has the target
(SmolLM2-135M-Instruct through llama.cpp) answer every user turn given the history it has
itself produced so far.

The prompt is the target's own chat template from the GGUF metadata (for SmolLM2: ChatML with a
default system prompt when the conversation has none), rendered the way
``transformers``' ``apply_chat_template`` renders it. The output is JSONL, one line per
conversation, flushed as it is written, so an interrupted run resumes where it stopped::

    {"id": "...", "conversations": [{"from": "system"|"human"|"gpt", "value": "..."}], "temperature": 0.0}

Only real system turns are written; the template's default one is added again when the data is
formatted for training.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from drafts.data.conversations import Conversation, Turn
from drafts.data.sharegpt import load_sharegpt
from drafts.errors import DatasetError, MoaError, ModelLoadError
from drafts.locations import smollm2_gguf

N_CTX = 2048  # llama.cpp context: prompt + reply must fit in it
MIN_USER_TOKENS = 16  # a user turn cut shorter than this is no longer a question worth answering
WIRE_SPEAKERS = {"system": "system", "user": "human", "assistant": "gpt"}


@dataclass(frozen=True)
class Reply:
    """The target's answer to a history whose last turn is the user's."""

    messages: tuple[Turn, ...]  # the history as the target saw it (a long user turn cut short)
    text: str
    n_tokens: int


# Answers a history ending with a user turn; None when the history cannot fit the context.
ReplyFn = Callable[[tuple[Turn, ...]], Reply | None]


class ChatTemplate:
    """The GGUF's Jinja chat template, rendered with the settings ``transformers`` uses."""

    def __init__(self, source: str, special_tokens: dict[str, str]) -> None:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        self._template = env.from_string(source)
        self._special_tokens = special_tokens

    def render(self, messages: Sequence[Turn]) -> str:
        """The prompt text for the assistant's next reply."""
        rows = [{"role": turn.role, "content": turn.content} for turn in messages]
        return self._template.render(messages=rows, add_generation_prompt=True, **self._special_tokens)


class LlamaReplier:
    """A :data:`ReplyFn` backed by llama.cpp: greedy at temperature 0, plain sampling above."""

    def __init__(self, gguf_path: Path, *, temperature: float, max_new_tokens: int, n_threads: int, seed: int) -> None:
        from llama_cpp import Llama

        if not gguf_path.is_file():
            raise ModelLoadError(f"GGUF file {gguf_path} does not exist; pass --gguf with an existing file")
        self.llm = Llama(model_path=str(gguf_path), n_ctx=N_CTX, n_threads=n_threads, verbose=False, seed=seed)
        self.template = ChatTemplate(_metadata_template(self.llm.metadata, gguf_path), self._special_tokens())
        self.temperature = temperature
        self.max_new_tokens = max_new_tokens
        self.stop_ids = {self.llm.token_eos(), *self.llm.tokenize(b"<|im_end|>", add_bos=False, special=True)}

    def __call__(self, messages: tuple[Turn, ...]) -> Reply | None:
        fitted = self._fit(messages)
        if fitted is None:
            return None
        messages, prompt_ids = fitted
        reply_ids: list[int] = []
        # Every filter that could reshape p is switched off, so the data follows the target's
        # own distribution at this temperature (what speculative sampling verifies against).
        for token in self.llm.generate(
            prompt_ids,
            temp=self.temperature,
            top_k=0,
            top_p=1.0,
            min_p=0.0,
            typical_p=1.0,
            repeat_penalty=1.0,
        ):
            if token in self.stop_ids:
                break
            reply_ids.append(token)
            if len(reply_ids) == self.max_new_tokens:
                break
        text = self.llm.detokenize(reply_ids).decode("utf-8", errors="replace")
        return Reply(messages, text, len(reply_ids))

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def _fit(self, messages: tuple[Turn, ...]) -> tuple[tuple[Turn, ...], list[int]] | None:
        """Cut the last (user) turn until prompt + reply fit the context; None if it cannot."""
        budget = N_CTX - self.max_new_tokens
        for _ in range(4):  # re-tokenising a cut text can shift a token or two: re-check
            prompt_ids = self.tokenize(self.template.render(messages))
            excess = len(prompt_ids) - budget
            if excess <= 0:
                return messages, prompt_ids
            user_ids = self.llm.tokenize(messages[-1].content.encode("utf-8"), add_bos=False, special=False)
            keep = len(user_ids) - excess - 4
            if keep < MIN_USER_TOKENS:
                return None
            cut = self.llm.detokenize(user_ids[:keep]).decode("utf-8", errors="ignore")
            messages = (*messages[:-1], Turn("user", cut))
        return None

    def _special_tokens(self) -> dict[str, str]:
        """The names templates may use for BOS/EOS, as transformers passes them to the template."""
        return {
            "bos_token": self.llm.detokenize([self.llm.token_bos()], special=True).decode("utf-8", "replace"),
            "eos_token": self.llm.detokenize([self.llm.token_eos()], special=True).decode("utf-8", "replace"),
        }


def _metadata_template(metadata: dict[str, Any], gguf_path: Path) -> str:
    template = metadata.get("tokenizer.chat_template")
    if not template:
        raise ModelLoadError(
            f"{gguf_path} has no chat template in its metadata; regenerate with an instruct (chat) model"
        )
    return str(template)


def regenerate(
    conversations: Iterable[Conversation],
    out_path: Path,
    *,
    gguf_path: Path | None = None,
    temperature: float,
    max_new_tokens: int = 256,
    max_user_turns: int = 2,
    n_threads: int = 1,
    seed: int = 0,
    progress: bool = True,
    reply_fn: ReplyFn | None = None,
) -> Path:
    """Answer each conversation's user turns with the target; append one JSON line per conversation.

    Conversations whose id is already in ``out_path`` are skipped, so a rerun resumes.
    ``reply_fn`` replaces llama.cpp (tests pass a fake); by default the GGUF at ``gguf_path``
    (the SmolLM2 target when None) answers.
    """
    conversations = list(conversations)
    done = written_ids(out_path)
    todo = [conv for conv in conversations if conv.id not in done]
    if not todo:
        return out_path
    if reply_fn is None:
        gguf_path = gguf_path or smollm2_gguf()
        reply_fn = LlamaReplier(
            gguf_path, temperature=temperature, max_new_tokens=max_new_tokens, n_threads=n_threads, seed=seed
        )
    bar = tqdm(
        total=len(conversations),
        initial=len(conversations) - len(todo),
        unit="conv",
        disable=not progress,
        file=sys.stderr,
        mininterval=5.0,
    )
    started, n_tokens = time.perf_counter(), 0
    with out_path.open("a", encoding="utf-8") as out:
        for conv in todo:
            turns, generated = answer(conv, reply_fn, max_user_turns)
            if any(turn.role == "assistant" for turn in turns):
                out.write(json.dumps(conversation_record(conv.id, turns, temperature), ensure_ascii=False) + "\n")
                out.flush()
            n_tokens += generated
            bar.set_postfix_str(f"{n_tokens / (time.perf_counter() - started):.1f} tok/s", refresh=False)
            bar.update(1)
    bar.close()
    return out_path


def answer(conv: Conversation, reply_fn: ReplyFn, max_user_turns: int) -> tuple[tuple[Turn, ...], int]:
    """The conversation re-answered by ``reply_fn``, and how many tokens it generated."""
    system = next((turn for turn in conv.turns[:1] if turn.role == "system"), None)
    history: tuple[Turn, ...] = (system,) if system else ()
    questions = [turn for turn in conv.turns if turn.role == "user"][:max_user_turns]
    n_tokens = 0
    for question in questions:
        reply = reply_fn((*history, question))
        if reply is None:
            break  # the history has outgrown the context: keep what fitted
        history = (*reply.messages, Turn("assistant", reply.text))
        n_tokens += reply.n_tokens
    return history, n_tokens


def conversation_record(conv_id: str, turns: Sequence[Turn], temperature: float) -> dict[str, Any]:
    wire = [{"from": WIRE_SPEAKERS[turn.role], "value": turn.content} for turn in turns]
    return {"id": conv_id, "conversations": wire, "temperature": temperature}


def written_ids(out_path: Path) -> set[str]:
    """Ids already written to ``out_path``; a torn last line (an interrupted write) is cut off."""
    if not out_path.exists():
        return set()
    data = out_path.read_bytes()
    complete_end = data.rfind(b"\n") + 1
    if complete_end < len(data):
        with out_path.open("r+b") as file:
            file.truncate(complete_end)
    done = set()
    for line_no, line in enumerate(data[:complete_end].splitlines(), start=1):
        try:
            done.add(str(json.loads(line)["id"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise DatasetError(
                f"{out_path} line {line_no} is not a regenerated conversation ({exc}); "
                f"delete that line (or the file) and rerun"
            ) from exc
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m drafts.data.regenerate",
        description="Answer ShareGPT questions again with the target model (self-distillation data).",
    )
    parser.add_argument("--split", choices=("train", "heldout"), default="train")
    parser.add_argument("--data", type=Path, default=None, help="a ShareGPT-style JSON/JSONL file instead of --split")
    parser.add_argument("--temperature", type=float, required=True, help="0 = greedy")
    parser.add_argument("--limit", type=int, default=None, help="the first N conversations of the split or file")
    parser.add_argument("--out", type=Path, required=True, help="JSONL output; an existing file is resumed")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--max-user-turns", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gguf", type=Path, default=None, help="target GGUF (default: SmolLM2-135M-Instruct)")
    args = parser.parse_args(argv)
    if args.temperature < 0 or args.max_new_tokens < 1 or args.max_user_turns < 1 or args.threads < 1:
        parser.error("--temperature must be >= 0; --max-new-tokens, --max-user-turns and --threads >= 1")
    try:
        source = load_sharegpt(args.split) if args.data is None else _file_conversations(args.data)
        conversations = source[: args.limit]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        regenerate(
            conversations,
            args.out,
            gguf_path=args.gguf,
            temperature=args.temperature,
            max_new_tokens=args.max_new_tokens,
            max_user_turns=args.max_user_turns,
            n_threads=args.threads,
            seed=args.seed,
        )
    except MoaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _file_conversations(path: Path) -> list[Conversation]:
    from drafts.training.data import load_training_conversations  # the one reader of ShareGPT-style files

    return load_training_conversations(str(path))


if __name__ == "__main__":
    sys.exit(main())
