from __future__ import annotations

from drafts.decoding.events import RoundEvent, TokenEvent, TokenSource


def round_event(accepted: tuple[int, ...], rejected: tuple[int, ...], proposed: int) -> RoundEvent:
    depths = tuple(range(1, len(accepted) + 1))
    return RoundEvent(1, accepted, 99, rejected, depths, proposed, 0.0, 0.0, (*accepted, 99))


def test_a_rounds_tokens_are_the_accepted_ones_then_the_targets() -> None:
    assert round_event((4, 5), (6,), proposed=3).tokens == (4, 5, 99)


def test_token_events_show_accepted_then_rejected_then_the_targets_token() -> None:
    events = round_event((4, 5), (6, 7), proposed=4).token_events()

    assert events == [
        TokenEvent(4, TokenSource.DRAFT_ACCEPTED),
        TokenEvent(5, TokenSource.DRAFT_ACCEPTED),
        TokenEvent(6, TokenSource.DRAFT_REJECTED),
        TokenEvent(7, TokenSource.DRAFT_REJECTED),
        TokenEvent(99, TokenSource.TARGET),
    ]


def test_proposed_depth_counts_the_accepted_path_and_the_rejected_chain() -> None:
    assert round_event((4, 5), (6, 7), proposed=9).proposed_depth == 4
    assert round_event((), (6,), proposed=3).proposed_depth == 1


def test_a_round_with_nothing_drafted_has_no_depth() -> None:
    assert round_event((), (), proposed=0).proposed_depth == 0
