"""Server tests: each test leaves the root logger as it found it (moa-server's CLI installs a JSON handler)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long soak runs only when asked for by name (``-m soak``), whatever other -m a run passes."""
    expression = str(config.getoption("markexpr") or "")
    if "soak" in expression.replace("soak_short", "") and "not soak" not in expression:
        return
    skip = pytest.mark.skip(reason="the long soak: run it with -m soak (or python -m server_stub.soak)")
    for item in items:
        if item.get_closest_marker("soak") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
