from __future__ import annotations

from drafts.drafters.base import DraftShape
from drafts.drafters.oracle import OracleDrafter
from drafts.sampling import SamplingConfig

PROMPT = [50, 51, 52]
REFERENCE = [10, 11, 12, 13, 14, 15]


def propose(drafter: OracleDrafter, generated: list[int], gamma: int) -> tuple[int, ...]:
    return drafter.propose(PROMPT + generated, DraftShape(gamma=gamma), SamplingConfig(), None).tokens


def test_proposes_the_reference_tokens_after_the_root() -> None:
    drafter = OracleDrafter(REFERENCE)
    drafter.begin(PROMPT)

    assert propose(drafter, [10], 3) == (11, 12, 13)
    assert propose(drafter, [10, 11, 12], 2) == (13, 14)


def test_near_the_end_of_the_reference_the_proposal_is_shorter() -> None:
    drafter = OracleDrafter(REFERENCE)
    drafter.begin(PROMPT)

    assert propose(drafter, REFERENCE[:4], 4) == (14, 15)
    assert propose(drafter, REFERENCE, 4) == ()


def test_begin_resets_the_prompt_length() -> None:
    drafter = OracleDrafter(REFERENCE)
    drafter.begin(PROMPT + [0, 0])

    assert drafter.propose(PROMPT + [0, 0, 10], DraftShape(gamma=1), SamplingConfig(), None).tokens == (11,)


def test_the_oracles_proposals_are_deterministic_chains() -> None:
    drafter = OracleDrafter(REFERENCE)
    drafter.begin(PROMPT)

    tree = drafter.propose(PROMPT + [10], DraftShape(gamma=2), SamplingConfig(), None)

    assert tree.is_chain and tree.q is None
