from __future__ import annotations

import pytest

from drafts.drafters.base import DraftShape
from drafts.errors import ConfigError


def test_the_default_shape_is_a_chain_of_four() -> None:
    shape = DraftShape()

    assert not shape.is_tree
    assert shape.describe() == "chain 4"


def test_parse_tree_reads_depth_top_k_and_total() -> None:
    shape = DraftShape.parse_tree("4,3,16")

    assert (shape.tree_depth, shape.tree_top_k, shape.tree_total) == (4, 3, 16)
    assert shape.is_tree and shape.gamma == 4
    assert shape.describe() == "tree 4,3,16"


@pytest.mark.parametrize("text", ["4,4", "4,4,16,2", "a,b,c", "", "4;4;16"])
def test_a_malformed_tree_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(ConfigError, match=r"DEPTH,TOPK,TOTAL .*e\.g\. 4,4,16"):
        DraftShape.parse_tree(text)


@pytest.mark.parametrize("text", ["4,0,16", "4,4,0", "1,-1,1"])
def test_a_tree_with_a_zero_or_negative_part_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="each >= 1"):
        DraftShape.parse_tree(text)


def test_a_negative_chain_is_refused() -> None:
    with pytest.raises(ConfigError, match="--chain must be >= 0"):
        DraftShape(gamma=-1)


def test_a_confidence_floor_is_a_chain_option_in_zero_to_one() -> None:
    shape = DraftShape(gamma=4, min_confidence=0.3)

    assert shape.describe() == "chain 4, confidence 0.3"
    assert shape.keeps(0.3) and not shape.keeps(0.29)
    with pytest.raises(ConfigError, match=r"--confidence must be in \[0, 1\), got 1.0"):
        DraftShape(gamma=4, min_confidence=1.0)
    with pytest.raises(ConfigError, match="--confidence applies to chains"):
        DraftShape(gamma=4, tree_depth=4, tree_top_k=4, tree_total=16, min_confidence=0.3)
