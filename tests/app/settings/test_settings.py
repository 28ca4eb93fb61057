"""Settings: validated at construction, with messages that name the key, the value and what is allowed."""

from __future__ import annotations

import dataclasses

import pytest

from app.settings import OPTIONS, Settings
from drafts.errors import ConfigError


def test_the_defaults_are_valid_and_every_option_is_a_field() -> None:
    settings = Settings()
    assert {f.name for f in dataclasses.fields(Settings)} == {o.name for o in OPTIONS}
    assert settings.as_dict() == {o.name: o.default for o in OPTIONS}


def test_settings_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().temperature = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("temperature", 5.0, "from 0 to 2"),
        ("temperature", "hot", "from 0 to 2"),
        ("top_p", 0.0, "above 0, at most 1"),
        ("max_tokens", 0, "from 1 to 32768"),
        ("max_tokens", 2.5, "integer"),
        ("tree", "4,4", "DEPTH,TOPK,TOTAL"),
        ("mode", "cloud", "demo, remote, local, api"),
        ("link", "56k", "lan, wifi, 5g, 4g, 3g, offline"),
        ("device", "tpu", "auto, cpu, cuda, mps"),
        ("target_linear", "fast", "auto, packed, dense"),
        ("server", "http://x", "ws://"),
        ("offline_model", "model.bin", ".gguf"),
        ("offline_budget", True, "integer from 1 to 100000"),
        ("offline_budget", 0, "integer from 1 to 100000"),
        ("stream", "yes", "true or false"),
        ("stream", 1, "true or false"),
    ],
)
def test_a_bad_value_names_the_key_the_value_and_what_is_allowed(key: str, value: object, allowed: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings(**{key: value})
    message = str(caught.value)
    assert key in message and repr(value) in message and allowed in message


def test_an_integer_is_taken_for_a_float() -> None:
    settings = Settings(temperature=1)
    assert settings.temperature == 1.0 and isinstance(settings.temperature, float)


def test_the_draft_shape_is_a_chain_or_a_tree() -> None:
    assert Settings(chain=6).shape.gamma == 6 and not Settings(chain=6).shape.is_tree
    tree = Settings(tree="4,4,16").shape
    assert (tree.tree_depth, tree.tree_top_k, tree.tree_total) == (4, 4, 16)


def test_decode_config_carries_sampling_length_and_shape() -> None:
    decode = Settings(temperature=0.7, top_p=0.9, max_tokens=64, chain=3).decode_config()
    assert (decode.max_new_tokens, decode.sampling.temperature, decode.sampling.top_p, decode.shape.gamma) == (
        64,
        0.7,
        0.9,
        3,
    )


def test_replace_validates() -> None:
    assert Settings().replace(theme="nord").theme == "nord"
    with pytest.raises(ConfigError, match="max_tokens"):
        Settings().replace(max_tokens=-1)


def test_a_device_may_name_its_index() -> None:
    assert Settings(device="cuda:1").device == "cuda:1"


def test_the_choices_copied_to_keep_torch_out_of_startup_match_the_cores() -> None:
    from app.settings import options
    from drafts.target.device import DEVICE_CHOICES
    from drafts.target.packed_linear import LINEAR_CHOICES

    assert options.DEVICE_CHOICES == DEVICE_CHOICES and options.LINEAR_CHOICES == LINEAR_CHOICES


def test_chain_0_is_the_best_measured_shape_for_where_the_target_runs() -> None:
    from drafts.target.default_shape import DEFAULT_CHAIN, PACKED_CPU_TREE, VERIFIER_DEFAULT

    assert Settings().chain == 0
    local = Settings(mode="local", device="cpu").shape  # the packed target on a CPU: a small tree
    assert local.is_tree and local.describe() == f"tree {PACKED_CPU_TREE}"
    dense = Settings(mode="local", device="cpu", target_linear="dense").shape
    assert dense.gamma == DEFAULT_CHAIN and not dense.is_tree
    # remote: the verifier's default, which the remote engine resolves by the verifier's device
    assert Settings(mode="remote").shape == Settings(mode="demo").shape == VERIFIER_DEFAULT
    assert Settings(mode="remote", chain=4).shape.gamma == 4 and not Settings(mode="remote", chain=4).shape.is_tree
    assert Settings(mode="remote", tree="4,4,16").shape.describe() == "tree 4,4,16"
    assert Settings(mode="local", device="cpu", chain=6).shape.gamma == 6  # a chain asked for is kept


def test_stream_is_a_switch_off_by_default() -> None:
    assert Settings().stream is False
    assert Settings(stream=True).stream is True
