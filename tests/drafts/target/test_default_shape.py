"""Default shapes (drafts.target.default_shape): in-process, the best measured shape for how the target runs;
remote, the tree for the verifier's device."""

from __future__ import annotations

import pytest
import torch

from drafts.drafters.base import DraftShape
from drafts.errors import ConfigError
from drafts.target.default_shape import (
    DEFAULT_CHAIN,
    PACKED_CPU_TREE,
    VERIFIER_DEFAULT,
    asked_shape,
    is_verifier_default,
    local_shape,
    verifier_shape,
)


def test_the_packed_cpu_target_drafts_a_small_tree_and_a_dense_one_a_chain() -> None:
    cpu = torch.device("cpu")

    packed = local_shape(cpu, torch.float32, "packed")
    dense = local_shape(cpu, torch.float32, "dense")

    assert packed == DraftShape.parse_tree(PACKED_CPU_TREE) and packed.tree_total <= 8  # a verify of <= 9 positions
    assert dense == DraftShape(gamma=DEFAULT_CHAIN)
    assert local_shape(cpu, torch.bfloat16) == dense  # packing is for float32 only


@pytest.mark.parametrize(
    ("device_kind", "tree"),
    [("cpu", "tree 4,4,16"), (None, "tree 4,4,16"), ("cuda", "tree 6,10,100"), ("mps", "tree 6,10,100")],
)
def test_the_verifier_default_is_the_tree_for_its_device(device_kind: str | None, tree: str) -> None:
    shape = verifier_shape(device_kind)

    assert shape.is_tree and shape.describe() == tree


def test_only_the_unasked_shape_is_the_verifier_default() -> None:
    assert is_verifier_default(VERIFIER_DEFAULT)
    assert not is_verifier_default(DraftShape(gamma=4))
    assert not is_verifier_default(DraftShape.parse_tree("4,4,16"))


def test_flags_ask_for_a_tree_a_chain_or_the_default_and_confidence_needs_a_chain() -> None:
    tree = DraftShape.parse_tree("3,4,8")

    def unused() -> DraftShape:
        raise AssertionError("the default is resolved only when no shape is asked for")

    assert asked_shape("4,4,16", None, 0.0, unused) == DraftShape.parse_tree("4,4,16")
    assert asked_shape(None, 3, 0.2, unused) == DraftShape(gamma=3, min_confidence=0.2)
    assert asked_shape(None, None, 0.0, lambda: tree) == tree
    assert asked_shape(None, None, 0.2, lambda: DraftShape(gamma=4)) == DraftShape(gamma=4, min_confidence=0.2)
    with pytest.raises(ConfigError, match="--confidence shapes a chain.*tree 3,4,8.*--chain G"):
        asked_shape(None, None, 0.2, lambda: tree)
