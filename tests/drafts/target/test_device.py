"""Choosing the dtype (the device choices are tested with loading, in test_loading.py)."""

from __future__ import annotations

import pytest
import torch

from drafts.errors import ConfigError
from drafts.target.device import resolve_dtype

CPU = torch.device("cpu")


def test_auto_keeps_float32_on_the_cpu_where_greedy_equality_is_exact() -> None:
    assert resolve_dtype("auto", CPU) is torch.float32


@pytest.mark.parametrize("name", ["float32", "bfloat16", "float16"])
def test_a_named_dtype_is_that_torch_dtype(name: str) -> None:
    assert resolve_dtype(name, CPU) is getattr(torch, name)


def test_an_unknown_dtype_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown dtype 'int8'; use one of auto, float32, bfloat16, float16"):
        resolve_dtype("int8", CPU)
