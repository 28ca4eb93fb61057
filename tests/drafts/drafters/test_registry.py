from __future__ import annotations

import pytest

from drafts.drafters import registry
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.drafters.oracle import OracleDrafter
from drafts.drafters.registry import DrafterSpec, drafter_names, drafter_spec, register
from drafts.errors import ConfigError


def test_the_built_in_drafters_are_registered() -> None:
    assert {"lookup", "oracle"} <= set(drafter_names())
    assert isinstance(drafter_spec("lookup").build(None, []), PromptLookupDrafter)  # type: ignore[arg-type]


def test_the_oracle_is_built_from_the_reference_it_needs() -> None:
    spec = drafter_spec("oracle")

    drafter = spec.build(None, [1, 2, 3])  # type: ignore[arg-type]

    assert spec.needs_reference
    assert isinstance(drafter, OracleDrafter) and drafter.reference == [1, 2, 3]


def test_an_unknown_name_lists_the_choices() -> None:
    with pytest.raises(
        ConfigError, match="unknown method 'nope'; choose from ar, generate, .*lookup.*oracle"
    ):
        drafter_spec("nope")


def test_a_registered_drafter_can_be_found_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    spec = DrafterSpec("echo", lambda runner, ref: PromptLookupDrafter(max_ngram=1), description="test")

    register(spec)

    assert drafter_spec("echo") is spec
    assert "echo" in drafter_names()
