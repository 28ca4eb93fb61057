"""Plain autoregressive decoding through the same runner: the baseline of every speedup.

Kept lean on purpose (one 1-token forward, last-position logits, argmax or one sample per
step): its per-token Python overhead must not exceed transformers' own ``generate``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import RoundEvent
from drafts.decoding.generation import Generation
from drafts.decoding.stopping import StopCondition, StopReason
from drafts.errors import ContextOverflowError
from drafts.sampling import choose
from drafts.target.runner import TargetRunner
from drafts.target.session import TargetSession


def autoregressive_rounds(
    runner: TargetRunner,
    prompt: list[int],
    config: DecodeConfig,
    gen: Generation,
    session: TargetSession | None = None,
) -> Iterator[RoundEvent]:
    """One event per target forward (the prefill first), each adding one target token.

    ``session`` continues a conversation: its committed tokens are a prefix of ``prompt`` (cut
    back to it beforehand; at least the prompt's last token left out); only the rest is prefilled.
    """
    if len(prompt) >= runner.context_length:
        raise ContextOverflowError(
            f"the prompt has {len(prompt)} tokens but the context holds {runner.context_length}; shorten it"
        )
    stop = StopCondition(config.max_new_tokens, runner.stop_ids, config.stop_strings)
    generator = config.sampling.generator()
    session = session if session is not None else runner.new_session()
    if session.length >= len(prompt):
        raise ValueError(f"the session holds {session.length} tokens of a {len(prompt)}-token prompt; truncate it")
    tokens, index = prompt[session.length :], 0
    while True:
        t0 = time.perf_counter()
        logits = runner.extend(session, tokens, last_only=True)  # (1, V)
        runner.commit(session)
        token = choose(logits[-1], config.sampling, generator)
        verdict = stop.check([*gen.tokens, token], runner.decode, new_from=len(gen.tokens))
        output = () if verdict is not None and verdict[0] == len(gen.tokens) else (token,)
        event = RoundEvent(index, (), token, (), (), 0, 0.0, time.perf_counter() - t0, output)
        gen.add(event)
        if verdict is not None:
            gen.stop = verdict[1]
        yield event
        if gen.stop is not None:
            return
        if session.length + 1 >= runner.context_length:
            gen.stop = StopReason.CONTEXT
            return
        tokens, index = [token], index + 1


def generate_autoregressive(runner: TargetRunner, prompt: list[int], config: DecodeConfig) -> Generation:
    gen = Generation(prompt_len=len(prompt))
    t0 = time.perf_counter()
    for _ in autoregressive_rounds(runner, prompt, config, gen):
        pass
    gen.wall_s = time.perf_counter() - t0
    return gen
