"""Speculative decoding on a tiny random Llama: at temperature 0 it is plain decoding, token for token."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from transformers import PreTrainedModel

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.generation import Generation
from drafts.decoding.speculative import generate
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import Drafter, DraftShape
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.drafters.oracle import OracleDrafter
from drafts.errors import ContextOverflowError
from drafts.sampling import SamplingConfig
from drafts.target.runner import TargetRunner
from tests.tiny_targets import random_tokens, tiny_model, tiny_runner
from tests.tree_drafter import TargetTop2TreeDrafter

MAX_NEW = 40
PROMPTS = {
    "random": random_tokens(16, seed=11),
    "repetitive": random_tokens(6, seed=12) * 3,  # gives prompt lookup something to find
}
# (runner, greedy reference) -> drafter
DRAFTERS: dict[str, Callable[[TargetRunner, list[int]], Drafter]] = {
    "lookup": lambda runner, reference: PromptLookupDrafter(),
    "oracle": lambda runner, reference: OracleDrafter(reference),
    "tree": lambda runner, reference: TargetTop2TreeDrafter(runner),
}


@pytest.fixture(scope="module")
def model() -> PreTrainedModel:
    return tiny_model("llama", seed=5)


def greedy(max_new_tokens: int = MAX_NEW, **options: object) -> DecodeConfig:
    return DecodeConfig(max_new_tokens, SamplingConfig(), DraftShape(gamma=4), **options)


def assert_same_generation(spec: Generation, ar: Generation) -> None:
    assert spec.tokens == ar.tokens
    assert spec.stop == ar.stop


def outputs(gen: Generation) -> list[int]:
    return [token for event in gen.rounds for token in event.output]


@pytest.mark.parametrize("prompt_name", sorted(PROMPTS))
@pytest.mark.parametrize("drafter_name", sorted(DRAFTERS))
def test_at_temperature_zero_speculative_decoding_gives_the_autoregressive_tokens(
    model: PreTrainedModel, drafter_name: str, prompt_name: str
) -> None:
    runner, prompt = tiny_runner(model), PROMPTS[prompt_name]
    ar = generate_autoregressive(runner, prompt, greedy())

    spec = generate(runner, DRAFTERS[drafter_name](runner, ar.tokens), prompt, greedy())

    assert len(ar.tokens) == MAX_NEW and ar.stop is StopReason.MAX_TOKENS
    assert_same_generation(spec, ar)
    if drafter_name != "lookup":  # lookup may find nothing to propose in a random prompt
        assert spec.target_forwards < ar.target_forwards


@pytest.mark.parametrize("gamma", [1, 3, 7])
def test_the_oracle_is_accepted_in_full_whatever_the_chain_length(model: PreTrainedModel, gamma: int) -> None:
    runner, prompt = tiny_runner(model), PROMPTS["random"]
    config = DecodeConfig(MAX_NEW, SamplingConfig(), DraftShape(gamma=gamma))
    ar = generate_autoregressive(runner, prompt, config)

    spec = generate(runner, OracleDrafter(ar.tokens), prompt, config)

    assert_same_generation(spec, ar)
    for event in spec.draft_rounds:
        assert event.rejected == ()
        assert len(event.accepted) == event.proposed
    assert spec.target_forwards == 1 + -(-(MAX_NEW - 1) // (gamma + 1))  # prefill + ceil(39 / (gamma + 1))


def test_the_tree_drafter_is_verified_along_a_path_that_skips_siblings(model: PreTrainedModel) -> None:
    runner, prompt = tiny_runner(model), PROMPTS["random"]

    spec = generate(runner, TargetTop2TreeDrafter(runner), prompt, greedy())

    # the drafter puts the target's choice second below the root: node 2, then its first child
    accepted_depths = [event.accepted_depths for event in spec.draft_rounds]
    assert accepted_depths.count((1, 2)) >= len(accepted_depths) - 1
    assert all(event.proposed == 6 for event in spec.draft_rounds)


@pytest.mark.parametrize("drafter_name", sorted(DRAFTERS))
def test_round_outputs_concatenate_to_the_generated_tokens(model: PreTrainedModel, drafter_name: str) -> None:
    runner, prompt = tiny_runner(model), PROMPTS["repetitive"]
    ar = generate_autoregressive(runner, prompt, greedy(max_new_tokens=23))

    spec = generate(runner, DRAFTERS[drafter_name](runner, ar.tokens), prompt, greedy(max_new_tokens=23))

    assert outputs(spec) == spec.tokens
    assert outputs(ar) == ar.tokens
    assert spec.rounds[0].output == (ar.tokens[0],)  # the prefill's token comes first
    for event in spec.rounds[:-1]:  # only the last round is cut by the stop
        assert event.output == event.tokens


def first_new_token_after(tokens: list[int], start: int) -> int:
    """Index of the first token at or after ``start`` that does not occur before it."""
    return next(i for i in range(start, len(tokens)) if tokens[i] not in tokens[:i])


@pytest.mark.parametrize("drafter_name", ["ar", *sorted(DRAFTERS)])
def test_a_stop_token_ends_the_output_before_it(model: PreTrainedModel, drafter_name: str) -> None:
    prompt = PROMPTS["random"]
    reference = generate_autoregressive(tiny_runner(model), prompt, greedy()).tokens
    cut = first_new_token_after(reference, 5)
    runner = tiny_runner(model, eos_token_id=reference[cut])

    gen = run(drafter_name, runner, prompt, greedy(), reference)

    assert gen.tokens == reference[:cut]
    assert gen.stop is StopReason.EOS
    assert reference[cut] not in gen.tokens


@pytest.mark.parametrize("before", [0, 1, 2])
@pytest.mark.parametrize("drafter_name", ["ar", *sorted(DRAFTERS)])
def test_a_stop_token_just_after_max_new_tokens_is_a_max_tokens_stop(
    model: PreTrainedModel, drafter_name: str, before: int
) -> None:
    # A speculative round may hold both the last allowed token and the stop token after it.
    prompt = PROMPTS["random"]
    reference = generate_autoregressive(tiny_runner(model), prompt, greedy()).tokens
    cut = first_new_token_after(reference, 5)
    runner = tiny_runner(model, eos_token_id=reference[cut])

    gen = run(drafter_name, runner, prompt, greedy(max_new_tokens=cut - before), reference)

    assert gen.tokens == reference[: cut - before]
    assert gen.stop is StopReason.MAX_TOKENS


@pytest.mark.parametrize("drafter_name", ["ar", *sorted(DRAFTERS)])
def test_a_stop_string_ends_the_output_with_the_token_that_completes_it(
    model: PreTrainedModel, drafter_name: str
) -> None:
    runner, prompt = tiny_runner(model), PROMPTS["random"]
    reference = generate_autoregressive(runner, prompt, greedy()).tokens
    text = runner.decode(reference)  # one character per token
    stop_string = text[9:11]
    cut = text.index(stop_string) + len(stop_string)

    gen = run(drafter_name, runner, prompt, greedy(stop_strings=(stop_string,)), reference)

    assert gen.tokens == reference[:cut]
    assert gen.stop is StopReason.STOP_STRING


@pytest.mark.parametrize("drafter_name", ["ar", *sorted(DRAFTERS)])
def test_max_new_tokens_caps_the_output(model: PreTrainedModel, drafter_name: str) -> None:
    runner, prompt = tiny_runner(model), PROMPTS["repetitive"]
    reference = generate_autoregressive(runner, prompt, greedy()).tokens

    gen = run(drafter_name, runner, prompt, greedy(max_new_tokens=7), reference)

    assert gen.tokens == reference[:7]
    assert gen.stop is StopReason.MAX_TOKENS


@pytest.mark.parametrize("drafter_name", ["ar", *sorted(DRAFTERS)])
def test_generation_stops_at_the_end_of_the_context_window_where_plain_decoding_does(
    drafter_name: str,
) -> None:
    runner = tiny_runner(tiny_model("llama", seed=5, max_position_embeddings=30))
    prompt = PROMPTS["random"]
    reference = generate_autoregressive(runner, prompt, greedy(max_new_tokens=100)).tokens

    gen = run(drafter_name, runner, prompt, greedy(max_new_tokens=100), reference)

    assert len(prompt) + len(gen.tokens) == 30
    assert gen.tokens == reference
    assert gen.stop is StopReason.CONTEXT


@pytest.mark.parametrize("drafter_name", ["ar", *sorted(DRAFTERS)])
def test_a_prompt_that_fills_the_context_is_refused(model: PreTrainedModel, drafter_name: str) -> None:
    runner = tiny_runner(model)

    with pytest.raises(ContextOverflowError, match="128 tokens but the context holds 128"):
        run(drafter_name, runner, random_tokens(128, seed=0), greedy(), [])


@pytest.mark.parametrize("drafter_name", ["ar", *sorted(DRAFTERS)])
def test_sampling_with_a_seed_is_reproducible(model: PreTrainedModel, drafter_name: str) -> None:
    runner, prompt = tiny_runner(model), PROMPTS["random"]
    reference = generate_autoregressive(runner, prompt, greedy()).tokens

    def sampled(seed: int) -> list[int]:
        config = DecodeConfig(
            MAX_NEW, SamplingConfig(temperature=1.0, top_k=20, seed=seed), DraftShape(gamma=4)
        )
        return run(drafter_name, runner, prompt, config, reference).tokens

    first, again, other = sampled(3), sampled(3), sampled(4)

    assert first == again
    assert first != other
    assert len(first) == MAX_NEW


def run(
    name: str, runner: TargetRunner, prompt: list[int], config: DecodeConfig, reference: list[int]
) -> Generation:
    """Generate with ``ar`` or one of :data:`DRAFTERS`."""
    if name == "ar":
        return generate_autoregressive(runner, prompt, config)
    return generate(runner, DRAFTERS[name](runner, reference), prompt, config)
