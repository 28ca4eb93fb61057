"""Conversations -> training sequences: the target's chat template, loss on assistant tokens."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from drafts.data.conversations import Conversation
from drafts.target.chat import as_message


@dataclass(frozen=True)
class Sequence:
    ids: torch.Tensor  # (T,) token ids
    loss_mask: torch.Tensor  # (T,) bool: assistant tokens (their end-of-turn marker included)


def tokenize_conversation(tokenizer: Any, conv: Conversation, max_len: int) -> Sequence | None:
    """Render with the chat template; None if no assistant token survives truncation."""
    messages = [as_message(t) for t in conv.turns]
    ids: list[int] = []
    mask: list[bool] = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before = _render(tokenizer, messages[:i], generation_prompt=True)
        after = _render(tokenizer, messages[: i + 1], generation_prompt=False)
        if after[: len(before)] != before or before[: len(ids)] != ids:
            break  # the template is not prefix-stable here; keep what is consistent
        mask += [False] * (len(before) - len(ids)) + [True] * (len(after) - len(before))
        ids = after
        if len(ids) >= max_len:
            break
    ids, mask = ids[:max_len], mask[:max_len]
    if not any(mask):
        return None
    return Sequence(torch.tensor(ids), torch.tensor(mask))


def tokenize_all(tokenizer: Any, conversations: Iterable[Conversation], max_len: int) -> Iterator[Sequence]:
    for conv in conversations:
        seq = tokenize_conversation(tokenizer, conv, max_len)
        if seq is not None:
            yield seq


def _render(tokenizer: Any, messages: list[dict[str, str]], generation_prompt: bool) -> list[int]:
    if not messages:
        return []
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=False)
    return list(tokenizer.encode(text, add_special_tokens=False))
