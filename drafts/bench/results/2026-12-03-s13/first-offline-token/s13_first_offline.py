"""The tokens a draft writes first for test_smollm2_chat's third turn, begun offline (session 13's bug check).

The draft observes the first two turns with the target's state (as the engine does online), then writes the
third message's answer alone: it has no target state of that message. A stop token (2, ``<|im_end|>``) first
means an empty offline answer, what failed the test with session 12's drafts. One checkpoint directory per
argument:

    HF_HUB_OFFLINE=1 python3 drafts/bench/results/2026-12-03-s13/first-offline-token/s13_first_offline.py DIR ...
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from drafts.data.conversations import Turn
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.neural.chain import ChainPolicy
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from drafts.target.chat import Said, format_chat_after
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import load_draft

USERS = ["Name three colours.", "Which one is the sky?", "Say it in French."]  # test_smollm2_chat's


def third_turn(runner: TargetRunner) -> tuple[list[int], list[int]]:
    """(what the draft observed: two turns and their greedy answers, the third turn's prompt)."""
    decode = DecodeConfig(max_new_tokens=24)
    messages: list[Turn] = []
    said: Said | None = None
    for text in USERS[:2]:
        messages.append(Turn("user", text))
        rendered = format_chat_after(runner.tokenizer, messages, said)
        answer = generate_autoregressive(runner, list(rendered.tokens), decode).tokens
        said = rendered.answered(answer, runner.decode(answer))
        messages.append(Turn("assistant", runner.decode(answer)))
    messages.append(Turn("user", USERS[2]))
    assert said is not None
    return list(said.tokens), list(format_chat_after(runner.tokenizer, messages, said).tokens)


def first_offline(runner: TargetRunner, checkpoint: Path, history: list[int], prompt: list[int]) -> list[int]:
    drafter = NeuralDrafter(load_draft(checkpoint, runner))
    drafter.begin(prompt)
    session = runner.new_session()
    runner.extend(session, history[:-1], drafter.needs)
    drafter.observe(history[:-1], runner.commit(session, None, drafter.needs))
    root, shown = prompt[drafter.observed], prompt[drafter.observed + 1 :]
    chain = drafter.start_chain(root, ChainPolicy(SamplingConfig()), None, shown)
    return chain.grow(6, False)


def main() -> None:
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    history, prompt = third_turn(runner)
    for path in sys.argv[1:]:
        tokens = first_offline(runner, Path(path), history, prompt)
        stop = " (a stop first: an empty answer)" if tokens[0] in runner.stop_ids else ""
        print(f"{path}: first offline tokens {tokens} {runner.decode(tokens)!r}{stop}")


if __name__ == "__main__":
    main()
