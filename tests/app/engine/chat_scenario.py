"""What the chat engine tests share: a tiny target with a chat template, on a real server.

The one-character fake tokenizer gains a tiny chat template (``[u]text|`` per message, ``[a]``
to start the answer) and an ``encode`` that inverts ``decode``, so an answer rendered back into
the next turn's prompt gives the very tokens that were generated: the case of a real template.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from app.engine.chat import Message
from app.engine.client_draft import ClientDraft
from app.engine.events import EngineEvent, Finished
from app.engine.remote_chat import RemoteChatEngine
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.neural.drafter import NeuralDrafter
from drafts.target.chat import format_chat
from drafts.target.runner import TargetRunner
from tests.app.engine.scenario import engine_config
from tests.app.engine.target_draft import TargetAsDraft
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import ALPHABET, VOCAB, FakeTokenizer


class ChatTokenizer(FakeTokenizer):
    chat_template = "[role]content|"  # truthy: format_chat calls apply_chat_template

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [ALPHABET.index(c) if c in ALPHABET else ord(c) % VOCAB for c in text]

    def apply_chat_template(self, messages: list[dict[str, str]], add_generation_prompt: bool, tokenize: bool) -> str:
        text = "".join(f"[{m['role'][0]}]{m['content']}|" for m in messages)
        return text + ("[a]" if add_generation_prompt else "")


TOKENIZER = ChatTokenizer()
SERVER = tiny_target_runner(tiny_llama(), TOKENIZER)
CLIENT = tiny_target_runner(tiny_llama(), TOKENIZER)
MOA_ID = "moa-chat-test"


def chat_draft(kind: str) -> ClientDraft:
    if kind == "target":
        model: Any = TargetAsDraft(tiny_target_runner(tiny_llama(), TOKENIZER))
        return ClientDraft.of(NeuralDrafter(model), "target-as-draft", CLIENT)
    return ClientDraft.of(NeuralDrafter(random_draft(kind, CLIENT, seed=1)), f"{kind}-chat-test", CLIENT)


def reference(messages: Sequence[Message], new_tokens: int, runner: TargetRunner = SERVER) -> list[int]:
    """The target's own greedy answer to ``messages``, decoded alone."""
    prompt = format_chat(TOKENIZER, messages)
    return generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=new_tokens)).tokens


async def answer(
    engine: RemoteChatEngine, messages: Sequence[Message], decode: DecodeConfig
) -> tuple[Finished, list[EngineEvent]]:
    events = [event async for event in engine.stream(messages, decode)]
    finished = events[-1]
    assert isinstance(finished, Finished)
    return finished, events


def run(coro: Any, timeout_s: float = 120.0) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout_s))


def chat_engine(port: int, kind: str = "moa", **options: Any) -> RemoteChatEngine:
    return RemoteChatEngine(engine_config(port, **options), chat_draft(kind))
