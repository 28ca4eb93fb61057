"""Decoding that continues a session: a conversation's next turn prefills only what is new.

The session (and the drafter) are cut back to the longest common prefix with the new prompt;
at temperature 0 the output is what decoding the new prompt from scratch gives.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drafts.decoding.autoregressive import autoregressive_rounds, generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import RoundEvent
from drafts.decoding.generation import Generation
from drafts.decoding.speculative import speculative_rounds
from drafts.drafters.base import DraftShape
from drafts.neural.drafter import NeuralDrafter
from drafts.sampling import SamplingConfig
from drafts.target.session import TargetSession
from tests.counting_runner import CountingRunner
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

CONFIG = DecodeConfig(16, SamplingConfig(), DraftShape(gamma=3))
FIRST = random_tokens(14, seed=31)
METHODS = ("speculative", "autoregressive")


@pytest.fixture(scope="module")
def runner() -> CountingRunner:
    return CountingRunner.of(tiny_target_runner(tiny_llama(seed=0)))


def rounds(
    method: str, runner: CountingRunner, drafter: NeuralDrafter, prompt: list[int], session: TargetSession
) -> tuple[Generation, Iterator[RoundEvent]]:
    gen = Generation(len(prompt))
    if method == "speculative":
        return gen, speculative_rounds(runner, drafter, prompt, CONFIG, gen, session)
    return gen, autoregressive_rounds(runner, prompt, CONFIG, gen, session)


def common_prefix(ran: list[int], prompt: list[int], held: int) -> int:
    """How many of the first ``held`` tokens the session ran are the new prompt's first tokens."""
    return next((i for i in range(held) if ran[i] != prompt[i]), held)


@pytest.mark.parametrize("method", METHODS)
def test_the_next_turn_prefills_only_its_new_tokens_and_decodes_as_from_scratch(
    runner: CountingRunner, method: str
) -> None:
    drafter, session = NeuralDrafter(random_draft("moa", runner, seed=2)), runner.new_session()
    drafter.begin(FIRST)
    first, events = rounds(method, runner, drafter, FIRST, session)
    for _ in events:
        pass
    second = FIRST + first.tokens + random_tokens(5, seed=32)
    held = common_prefix(FIRST + [t for event in first.rounds for t in event.tokens], second, session.length)
    session.truncate(held)  # the first prompt and answer, less the answer's last token (never run)
    if method == "speculative":
        drafter.truncate(held)

    runner.ran = 0
    gen, events = rounds(method, runner, drafter, second, session)
    next(events)
    prefilled = runner.ran
    for _ in events:
        pass

    assert held >= len(FIRST) + len(first.tokens) - 1
    assert prefilled == len(second) - held
    assert gen.tokens == generate_autoregressive(runner, second, CONFIG).tokens


@pytest.mark.parametrize("method", METHODS)
def test_a_session_cut_back_into_the_prompt_gives_the_scratch_output(runner: CountingRunner, method: str) -> None:
    drafter, session = NeuralDrafter(random_draft("eagle", runner, seed=2)), runner.new_session()
    drafter.begin(FIRST)
    for _ in rounds(method, runner, drafter, FIRST, session)[1]:
        pass
    edited = FIRST[:9] + random_tokens(6, seed=33)

    session.truncate(9)
    if method == "speculative":
        drafter.truncate(9)
    gen, events = rounds(method, runner, drafter, edited, session)
    for _ in events:
        pass

    assert gen.tokens == generate_autoregressive(runner, edited, CONFIG).tokens


def test_a_session_holding_the_whole_prompt_is_refused(runner: CountingRunner) -> None:
    session = runner.new_session()
    runner.extend(session, FIRST)
    runner.commit(session)

    with pytest.raises(ValueError, match="truncate"):
        next(autoregressive_rounds(runner, FIRST, CONFIG, Generation(len(FIRST)), session))
