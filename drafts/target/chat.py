"""Formatting chat turns into the prompt tokens a target expects (its own chat template)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def as_message(turn: Any) -> dict[str, str]:
    """A ``{"role", "content"}`` dict from a dict or any object with ``role``/``content``."""
    if isinstance(turn, Mapping):
        return {"role": str(turn["role"]), "content": str(turn["content"])}
    return {"role": str(turn.role), "content": str(turn.content)}


def format_chat(tokenizer: Any, turns: Sequence[Any]) -> list[int]:
    """Token ids of ``turns`` followed by the start of the assistant's reply.

    Models without a chat template (base models such as Gemma 3 270M) get a plain
    ``User: ... / Assistant:`` transcript after the BOS token.
    """
    messages = [as_message(t) for t in turns]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return list(tokenizer.encode(text, add_special_tokens=False))
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    text = "\n\n".join(lines) + "\n\nAssistant:"
    return list(tokenizer.encode(text, add_special_tokens=True))


def stop_token_ids(tokenizer: Any, generation_eos: int | list[int] | None) -> frozenset[int]:
    """Every token id that ends a reply: EOS ids and the template's end-of-turn token."""
    ids: set[int] = set()
    for candidate in (tokenizer.eos_token_id, generation_eos):
        if isinstance(candidate, int):
            ids.add(candidate)
        elif isinstance(candidate, list):
            ids.update(int(c) for c in candidate)
    vocab = tokenizer.get_vocab()
    for marker in ("<|im_end|>", "<end_of_turn>", "<|eot_id|>"):
        if marker in vocab:
            ids.add(int(vocab[marker]))
    return frozenset(ids)
