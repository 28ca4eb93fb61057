"""Formatting chat turns into the prompt tokens a target expects (its own chat template).

A chat's later turns must extend the tokens the target already holds, token for token: the
answer the model generated is re-rendered as text by the template, and encoding that text again
need not give the same tokens (SmolLM2 generates "\n\n" as one token and encodes it as two). So
:func:`format_chat_after` keeps what was *said* (:class:`Said`: the text and the tokens that
produced it, in step) and encodes only the text the template adds after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def as_message(turn: Any) -> dict[str, str]:
    """A ``{"role", "content"}`` dict from a dict or any object with ``role``/``content``."""
    if isinstance(turn, Mapping):
        return {"role": str(turn["role"]), "content": str(turn["content"])}
    return {"role": str(turn.role), "content": str(turn.content)}


@dataclass(frozen=True)
class Said:
    """A conversation so far as text and as the tokens the target ran on, in step."""

    text: str
    tokens: tuple[int, ...]

    def answered(self, tokens: Sequence[int], text: str) -> Said:
        """This prompt followed by the generated answer (``text`` is the decoded ``tokens``)."""
        return Said(self.text + text, (*self.tokens, *tokens))


def format_chat(tokenizer: Any, turns: Sequence[Any]) -> list[int]:
    """Token ids of ``turns`` followed by the start of the assistant's reply.

    Models without a chat template (base models such as Gemma 3 270M) get a plain
    ``User: ... / Assistant:`` transcript after the BOS token.
    """
    return list(render_chat(tokenizer, turns).tokens)


def render_chat(tokenizer: Any, turns: Sequence[Any]) -> Said:
    """``turns`` and the start of the assistant's reply, as text and tokens (see :func:`format_chat`)."""
    text, bos = chat_text(tokenizer, turns)
    return Said(text, tuple(tokenizer.encode(text, add_special_tokens=bos)))


def format_chat_after(tokenizer: Any, turns: Sequence[Any], said: Said | None) -> Said:
    """Like :func:`render_chat`, but keeping ``said``'s tokens where the new text extends its text.

    When the rendered text starts with ``said.text`` (the previous prompt and its answer, as the
    template writes an assistant message verbatim), only the rest is encoded; otherwise (an edited
    or regenerated turn, a template that rewrites content) the whole text is encoded afresh.
    """
    text, bos = chat_text(tokenizer, turns)
    if said is None or not said.tokens or not text.startswith(said.text):
        return Said(text, tuple(tokenizer.encode(text, add_special_tokens=bos)))
    rest = tokenizer.encode(text[len(said.text) :], add_special_tokens=False)
    return Said(text, (*said.tokens, *rest))


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share: what a cache holding ``a`` keeps for ``b``."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def chat_text(tokenizer: Any, turns: Sequence[Any]) -> tuple[str, bool]:
    """The rendered text of ``turns`` + the assistant's start, and whether encoding adds BOS."""
    messages = [as_message(t) for t in turns]
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False), False
    lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n\n".join(lines) + "\n\nAssistant:", True


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
