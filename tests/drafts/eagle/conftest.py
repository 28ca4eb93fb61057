"""The EAGLE tests' shared fixtures: a tiny random target, an EAGLE draft on it, and noise off."""

from __future__ import annotations

import pytest

from drafts.eagle import model as eagle_model
from drafts.eagle.model import EagleDraft
from drafts.target.runner import TargetRunner
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return tiny_target_runner(tiny_llama(seed=0))


@pytest.fixture(scope="module")
def draft(runner: TargetRunner) -> EagleDraft:
    model = random_draft("eagle", runner, seed=3)
    assert isinstance(model, EagleDraft)
    return model


@pytest.fixture
def no_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eagle_model, "NOISE", 0.0)
