"""The packaging tests build the desktop binary (minutes): they run only when asked for.

``pytest -m packaging tests/packaging`` runs them; any other run (``pytest -q``,
``pytest -m "not integration"``) skips them, so the fast local run never starts a build.
"""

from __future__ import annotations

import re

import pytest

ASKED_FOR = re.compile(r"(?<!not )\bpackaging\b")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ASKED_FOR.search(config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="builds the desktop binary (minutes): run with -m packaging")
    for item in items:
        if item.get_closest_marker("packaging") is not None:
            item.add_marker(skip)
