from __future__ import annotations

from pathlib import Path

import pytest
import torch

from drafts.drafters import registry
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.drafters.oracle import OracleDrafter
from drafts.drafters.registry import DrafterSpec, drafter_names, drafter_spec, register
from drafts.errors import ConfigError
from drafts.neural.drafter import NeuralDrafter
from drafts.training.checkpoint import save_draft
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner


def test_the_built_in_drafters_are_registered() -> None:
    assert {"lookup", "oracle"} <= set(drafter_names())
    assert isinstance(drafter_spec("lookup").build(None, []), PromptLookupDrafter)  # type: ignore[arg-type]


def test_the_oracle_is_built_from_the_reference_it_needs() -> None:
    spec = drafter_spec("oracle")

    drafter = spec.build(None, [1, 2, 3])  # type: ignore[arg-type]

    assert spec.needs_reference
    assert isinstance(drafter, OracleDrafter) and drafter.reference == [1, 2, 3]


def test_an_unknown_name_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown method 'nope'; choose from ar, generate, .*lookup.*oracle"):
        drafter_spec("nope")


def test_a_registered_drafter_can_be_found_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    spec = DrafterSpec("echo", lambda runner, ref: PromptLookupDrafter(max_ngram=1), description="test")

    register(spec)

    assert drafter_spec("echo") is spec
    assert "echo" in drafter_names()


@pytest.fixture
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_CHECKPOINTS", {})


@pytest.mark.usefixtures("isolated_registry")
def test_a_named_checkpoint_adds_a_method_of_its_own_kind(tmp_path: Path) -> None:
    runner = tiny_target_runner(tiny_llama(seed=0), name="tiny-llama")
    save_draft(tmp_path / "a", random_draft("eagle", runner, seed=1), runner.fingerprint, {"tokens": 1})
    save_draft(tmp_path / "b", random_draft("eagle", runner, seed=2), runner.fingerprint, {"tokens": 1})

    registry.set_checkpoint("eagle", tmp_path / "a")
    registry.set_checkpoint("eagle-b", tmp_path / "b")
    overridden = drafter_spec("eagle").build(runner, [])
    added = drafter_spec("eagle-b").build(runner, [])

    assert isinstance(added, NeuralDrafter) and isinstance(overridden, NeuralDrafter)
    assert (added.name, added.model.kind, overridden.name) == ("eagle-b", "eagle", "eagle")
    weights = [dict(d.model.named_parameters()) for d in (overridden, added)]
    name = next(n for n, p in weights[0].items() if p.requires_grad)
    assert not torch.equal(weights[0][name], weights[1][name])  # each name loaded its own file
    assert "eagle-b" in drafter_names()


@pytest.mark.usefixtures("isolated_registry")
@pytest.mark.parametrize(
    ("name", "message"), [("lookup", "built-in method without a checkpoint"), ("a=b", "letters, digits")]
)
def test_a_checkpoint_name_that_cannot_be_a_method_is_refused(name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        registry.set_checkpoint(name, Path("runs/x"))
