from __future__ import annotations

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.stopping import StopReason
from drafts.errors import ConfigError
from drafts.sampling import SamplingConfig
from tests.tiny_targets import ARCHITECTURES, random_tokens, tiny_model, tiny_runner


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_greedy_decoding_is_the_argmax_of_a_full_forward_at_every_step(architecture: str) -> None:
    runner = tiny_runner(tiny_model(architecture))
    prompt = random_tokens(9, seed=4)

    gen = generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=12))

    expected = []
    with torch.inference_mode():
        for _ in range(12):
            logits = runner.model(input_ids=torch.tensor([prompt + expected])).logits[0, -1]
            expected.append(int(logits.argmax()))
    assert gen.tokens == expected
    assert gen.stop is StopReason.MAX_TOKENS


def test_each_target_forward_is_one_round_with_one_token() -> None:
    runner = tiny_runner(tiny_model("llama"))

    gen = generate_autoregressive(runner, random_tokens(9, seed=4), DecodeConfig(max_new_tokens=5))

    assert gen.target_forwards == 5 == len(gen.rounds)
    assert [event.index for event in gen.rounds] == [0, 1, 2, 3, 4]
    assert [event.output for event in gen.rounds] == [(t,) for t in gen.tokens]
    assert all(event.accepted == () and event.proposed == 0 for event in gen.rounds)
    assert gen.prompt_len == 9 and gen.wall_s > 0


def test_the_stop_token_ends_the_last_round_with_no_output() -> None:
    model = tiny_model("llama")
    prompt = random_tokens(9, seed=4)
    reference = generate_autoregressive(tiny_runner(model), prompt, DecodeConfig(max_new_tokens=12)).tokens
    cut = next(i for i in range(3, 12) if reference[i] not in reference[:i])

    gen = generate_autoregressive(tiny_runner(model, eos_token_id=reference[cut]), prompt, DecodeConfig(12))

    assert gen.tokens == reference[:cut]
    assert gen.rounds[-1].next_token == reference[cut] and gen.rounds[-1].output == ()


@pytest.mark.parametrize("max_new_tokens", [0, -3])
def test_max_new_tokens_below_one_is_refused(max_new_tokens: int) -> None:
    with pytest.raises(ConfigError, match="--max-new-tokens must be >= 1"):
        DecodeConfig(max_new_tokens=max_new_tokens)


def test_the_default_decode_config_is_greedy_with_a_chain_of_four() -> None:
    config = DecodeConfig()

    assert config.sampling == SamplingConfig()
    assert config.shape.describe() == "chain 4"
