"""Fixtures for the dataset tests: every test gets its own cache directory."""

from __future__ import annotations

import pytest

from drafts.data import sharegpt


@pytest.fixture(autouse=True)
def isolated_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory):
    """Unit tests write caches under a temporary directory; integration tests use the real one."""
    monkeypatch.setattr(sharegpt, "_memo", {})
    if "integration" not in request.keywords:
        monkeypatch.setenv("MOA_CHAT_CACHE", str(tmp_path_factory.mktemp("cache")))
