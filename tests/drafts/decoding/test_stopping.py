from __future__ import annotations

from collections.abc import Sequence

import pytest

from drafts.decoding.stopping import StopCondition, StopReason


def letters(ids: Sequence[int]) -> str:
    """Token i is the letter ``"abcdefghij"[i]``."""
    return "".join("abcdefghij"[i] for i in ids)


def test_nothing_stops_a_short_generation_without_stop_tokens() -> None:
    assert StopCondition(10, frozenset({9})).check([1, 2, 3], letters) is None


def test_a_stop_token_ends_the_generation_and_is_not_kept() -> None:
    assert StopCondition(10, frozenset({9})).check([1, 2, 9, 4], letters) == (2, StopReason.EOS)


def test_stop_tokens_before_new_from_were_checked_already() -> None:
    stop = StopCondition(10, frozenset({9}))

    assert stop.check([9, 1, 2], letters, new_from=1) is None
    assert stop.check([9, 1, 9], letters, new_from=1) == (2, StopReason.EOS)


def test_max_tokens_keeps_exactly_max_new_tokens() -> None:
    stop = StopCondition(3)

    assert stop.check([1, 2], letters) is None
    assert stop.check([1, 2, 3], letters) == (3, StopReason.MAX_TOKENS)
    assert stop.check([1, 2, 3, 4, 5], letters) == (3, StopReason.MAX_TOKENS)


def test_a_stop_string_keeps_the_shortest_prefix_that_contains_it() -> None:
    stop = StopCondition(20, stop_strings=("cde",))

    # "abcdefcde": "cde" is complete after the 5th token
    assert stop.check([0, 1, 2, 3, 4, 5, 2, 3, 4], letters) == (5, StopReason.STOP_STRING)


def test_a_stop_string_spanning_tokens_is_found_in_the_decoded_text() -> None:
    def pairs(ids: Sequence[int]) -> str:
        return "".join(["ab", "cd", "ef"][i] for i in ids)

    assert StopCondition(20, stop_strings=("bc",)).check([0, 1, 2], pairs) == (2, StopReason.STOP_STRING)


def test_any_of_several_stop_strings_stops() -> None:
    stop = StopCondition(20, stop_strings=("zz", "bc"))

    assert stop.check([0, 1, 2, 3], letters) == (3, StopReason.STOP_STRING)


# A speculative round adds several tokens at once; the stop must be where plain decoding, one
# token at a time, would have put it: the earliest of all reasons.


def test_a_stop_token_after_max_tokens_does_not_extend_the_output() -> None:
    assert StopCondition(3, frozenset({9})).check([1, 2, 3, 4, 9], letters, new_from=2) == (
        3,
        StopReason.MAX_TOKENS,
    )


def test_a_stop_string_completed_after_max_tokens_does_not_extend_the_output() -> None:
    stop = StopCondition(3, stop_strings=("de",))

    assert stop.check([1, 2, 0, 3, 4], letters, new_from=2) == (3, StopReason.MAX_TOKENS)


def test_a_stop_string_completed_before_a_stop_token_wins() -> None:
    stop = StopCondition(20, frozenset({9}), stop_strings=("bc",))

    assert stop.check([0, 1, 2, 3, 9], letters) == (3, StopReason.STOP_STRING)


def test_a_stop_token_before_a_stop_string_wins() -> None:
    stop = StopCondition(20, frozenset({9}), stop_strings=("de",))

    assert stop.check([0, 9, 3, 4], letters) == (1, StopReason.EOS)


@pytest.mark.parametrize(
    ("generated", "expected"),
    [
        ([1, 2, 9], (2, StopReason.EOS)),  # the stop token is the 3rd token: 2 kept, within max 3
        ([1, 2, 3], (3, StopReason.MAX_TOKENS)),
    ],
)
def test_one_token_at_a_time_the_stop_matches_plain_decoding(
    generated: list[int], expected: tuple[int, StopReason]
) -> None:
    stop = StopCondition(3, frozenset({9}))

    assert stop.check(generated, letters, new_from=len(generated) - 1) == expected
