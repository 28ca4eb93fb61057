"""The remote engine's default shape: the tree for the verifier's device (drafts.target.default_shape)."""

from __future__ import annotations

import pytest

from drafts.drafters.base import DraftShape
from drafts.target.default_shape import VERIFIER_DEFAULT, is_verifier_default, verifier_shape


@pytest.mark.parametrize(
    ("device_kind", "tree"),
    [("cpu", "tree 4,4,16"), (None, "tree 4,4,16"), ("cuda", "tree 6,10,60"), ("mps", "tree 6,10,60")],
)
def test_the_verifier_default_is_the_tree_for_its_device(device_kind: str | None, tree: str) -> None:
    shape = verifier_shape(device_kind)

    assert shape.is_tree and shape.describe() == tree


def test_only_the_unasked_shape_is_the_verifier_default() -> None:
    assert is_verifier_default(VERIFIER_DEFAULT)
    assert not is_verifier_default(DraftShape(gamma=4))
    assert not is_verifier_default(DraftShape.parse_tree("4,4,16"))
