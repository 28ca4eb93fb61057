"""The remote benchmark's chats (``--turns N``): each conversation played as a chat of N user turns.

The assistant's turns are the engine's own answers, so each turn's prompt is the last one, its
answer and the next user message: the engine keeps the verifier's and the draft's common prefix
with the previous turn and sends only the new tokens. Per link and method, each turn's time to
first token, prompt tokens sent (Prefill) and bytes received before the first token are averaged
over the chats: with prefix reuse turn 5 costs about what turn 1 costs, not five times it.

Each chat starts cold (``EngineThread.forget``): nothing carries over from another chat. At T = 0
every answer is compared with plain greedy decoding of the same prompt on the client's copy of
the target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.bench.chats import BenchChat
from app.engine.events import Finished
from app.engine.sync import EngineThread
from drafts.data.conversations import Turn
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.target.chat import Said, format_chat_after
from drafts.target.runner import TargetRunner


@dataclass
class TurnTotals:
    """One turn (1, 2, ...) of one method on one link, summed over chats."""

    chats: int = 0
    ttft_s: float = 0.0
    prefill_tokens: int = 0
    bytes_down_to_first_token: int = 0

    def add(self, finished: Finished) -> None:
        stats = finished.stats
        self.chats += 1
        self.ttft_s += stats.ttft_s if stats.ttft_s is not None else stats.wall_s
        self.prefill_tokens += stats.prefill_tokens
        self.bytes_down_to_first_token += stats.bytes_down_to_first_token

    def to_json(self, turn: int) -> dict[str, Any]:
        n = max(self.chats, 1)
        return {
            "turn": turn,
            "ttft_s": self.ttft_s / n,
            "prefill_tokens_sent": self.prefill_tokens / n,
            "bytes_down_before_first_token": self.bytes_down_to_first_token / n,
        }


@dataclass
class References:
    """Greedy answers of the client's target, computed once per prompt."""

    runner: TargetRunner
    decode: DecodeConfig
    cache: dict[tuple[int, ...], list[int]] = field(default_factory=dict)

    def __call__(self, prompt: list[int]) -> list[int]:
        key = tuple(prompt)
        if key not in self.cache:
            self.cache[key] = generate_autoregressive(self.runner, prompt, self.decode).tokens
        return self.cache[key]


def play_chat(
    engine: EngineThread,
    runner: TargetRunner,
    chat: BenchChat,
    decode: DecodeConfig,
    reference: References | None,
) -> tuple[list[Finished], bool | None]:
    """One chat from a cold start: each turn's Finished, and whether every answer equals ``ar``
    (None when there is no reference: T > 0)."""
    engine.forget()
    messages: list[Turn] = [chat.system] if chat.system is not None else []
    answers: list[Finished] = []
    identical: bool | None = None if reference is None else True
    said: Said | None = None
    for user in chat.users:
        messages.append(user)
        rendered = format_chat_after(runner.tokenizer, messages, said)  # as a chat engine renders it
        prompt = list(rendered.tokens)
        finished = engine.generate(prompt, decode)
        said = rendered.answered(finished.tokens, finished.text)
        answers.append(finished)
        if reference is not None:
            identical = bool(identical) and list(finished.tokens) == reference(prompt)
        messages.append(Turn("assistant", finished.text))
    return answers, identical


def turn_rows(per_turn: list[TurnTotals]) -> list[dict[str, Any]]:
    return [totals.to_json(k + 1) for k, totals in enumerate(per_turn)]


Tick = Callable[[str], None]
