"""The proposer's own rules, without a draft or a server: what it counts per part, and which drafts it drops.

A fake generation stands in for :class:`~app.engine.generation.Generation`: the rules read only its
round trip, its settings and (for a draft) its worker, stubbed here."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch

from app.engine.proposal_tally import ProposalStats, ProposalTally
from app.engine.proposer import Proposer, Sent
from drafts.drafters.base import DraftShape
from drafts.protocol import Generated
from drafts.tree import DraftTree

BASE, ROOT = 10, 7  # the stream's first root: token 7 at session index 10


def generation(rtt_s: float | None = None) -> Any:
    async def work(fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)

    progress = SimpleNamespace(drafted=lambda seconds: None)
    config, session, pacer = SimpleNamespace(stream_lag=0), SimpleNamespace(link=None), SimpleNamespace(rtt_s=rtt_s)
    return SimpleNamespace(pacer=pacer, work=work, progress=progress, config=config, session=session)


def part(tokens: list[int], committed: int, drafted: int = 0) -> Generated:
    return Generated(1, torch.tensor(tokens), committed, False, drafted=drafted)


def proposer_that_sent(tree: DraftTree, rtt_s: float | None = None) -> Proposer:
    """A proposer (no request id: it drafts nothing) that sent ``tree`` below the first root just now."""
    proposer = Proposer(generation(rtt_s), BASE, ROOT)
    proposer.sent.append(Sent(BASE, tree, time.perf_counter()))
    return proposer


async def stream(proposer: Proposer) -> None:
    """The Generate got its id: the proposer drafts until nothing newer came."""
    proposer.started(1)
    assert proposer.task is not None
    await proposer.task


def test_a_part_counts_the_lag_and_applied_nodes_of_the_proposal_sent_before_the_part_before_it() -> None:
    proposer = proposer_that_sent(DraftTree.chain([20, 21, 22, 23]))
    proposer.took(part([20], BASE + 1), 0.2)  # its step began before the proposal was sent: no proposal
    proposer.took(part([21, 22, 30], BASE + 4, drafted=2), 0.3)  # lag 1: 21, 22, 23 applied, 2 accepted

    stats = proposer.tally.stats()
    assert stats.steps == 2 and stats.steps_with_proposal == 1
    assert stats.lag_counts == (0, 1, 0, 0, 0)
    assert stats.steps_applied == 1 and stats.applied_nodes == 3 and stats.accepted == 2
    assert abs(stats.step_s - 0.5) < 1e-9


def test_a_proposal_that_guessed_the_lag_tokens_wrong_counts_as_not_applied() -> None:
    proposer = proposer_that_sent(DraftTree.chain([20, 21]))
    proposer.took(part([25], BASE + 1), 0.1)  # the server made 25, the proposal guessed 20
    proposer.took(part([26], BASE + 2), 0.1)

    stats = proposer.tally.stats()
    assert stats.lag_counts == (0, 1, 0, 0, 0) and stats.steps_applied == 0 and stats.applied_nodes == 0


def test_a_proposal_sent_within_a_round_trip_of_the_part_before_counts_as_not_there_yet() -> None:
    proposer = proposer_that_sent(DraftTree.chain([20, 21]), rtt_s=1e6)  # a round trip longer than the test
    proposer.took(part([20], BASE + 1), 0.1)
    proposer.took(part([21], BASE + 2), 0.1)

    assert proposer.tally.stats().steps_with_proposal == 0


def test_a_draft_that_a_newer_part_contradicts_is_dropped_and_the_next_draft_starts_from_the_newest_root() -> None:
    proposer = Proposer(generation(), BASE, ROOT)
    drafted: list[tuple[int, int]] = []
    proposed: list[int] = []

    def draft(waiting: Any, base: int, root: int, lag: int) -> DraftTree:
        drafted.append((base, root))
        if len(drafted) == 1:  # while the first draft runs, the server made 25 (the draft guessed 20)
            proposer.took(part([25], BASE + 1), 0.1)
        return DraftTree.chain([20, 21])

    async def propose(base: int, tree: DraftTree, lag: int) -> None:
        proposed.append(base)

    proposer._draft = draft  # type: ignore[method-assign]
    proposer._propose = propose  # type: ignore[method-assign]
    asyncio.run(stream(proposer))

    assert drafted == [(BASE, ROOT), (BASE + 1, 25)]
    assert proposed == [BASE + 1]  # the first draft was not sent
    assert proposer.tally.stats().skipped == 1


def test_a_draft_that_a_newer_part_agrees_with_is_still_sent() -> None:
    proposer = Proposer(generation(), BASE, ROOT)
    proposed: list[int] = []

    def draft(waiting: Any, base: int, root: int, lag: int) -> DraftTree:
        if base == BASE:
            proposer.took(part([20], BASE + 1), 0.1)  # the server made 20, as the draft guessed
        return DraftTree.chain([20, 21])

    async def propose(base: int, tree: DraftTree, lag: int) -> None:
        proposed.append(base)

    proposer._draft = draft  # type: ignore[method-assign]
    proposer._propose = propose  # type: ignore[method-assign]
    asyncio.run(stream(proposer))

    assert proposed == [BASE, BASE + 1] and proposer.tally.stats().skipped == 0


def test_proposal_stats_add_up_and_report_per_step_figures() -> None:
    tally = ProposalTally()
    tally.step(0.2, accepted=1, lag=1, applied=3)
    tally.step(0.2, accepted=0, lag=6, applied=0)
    tally.sent(nodes=4, stale=0)
    tally.drafted(0.05)
    total = tally.stats() + ProposalStats()

    figures = total.to_json()
    assert figures["lag_counts"] == [0, 1, 0, 0, 1]  # lag 6 counts as 4+
    assert figures["mean_lag"] == 2.5 and figures["applied_share"] == 0.5
    assert figures["applied_nodes_per_step"] == 1.5 and figures["accepted_per_step"] == 0.5
    assert abs(figures["step_ms"] - 200.0) < 1e-6 and abs(figures["draft_ms"] - 50.0) < 1e-6  # type: ignore[operator]


class RecordingDrafter:
    """Stands in for the draft: records which proposal it was asked for."""

    def __init__(self) -> None:
        self.observed = BASE
        self.asked: list[tuple[Any, ...]] = []

    def fan(self, root: int, width: int, depth: int, lead: int = 1) -> DraftTree:
        self.asked.append(("fan", root, width, depth, lead))
        return DraftTree.chain([1])

    def tree(self, root: int, shape: DraftShape) -> DraftTree:
        self.asked.append(("tree", root, shape.tree_depth, shape.tree_top_k, shape.tree_total))
        return DraftTree.chain([1])

    def start_chain(self, root: int) -> Any:
        def grow(n: int) -> None:
            self.asked.append(("chain", root, n))

        return SimpleNamespace(grow=grow, tokens=[1], sparse_q=lambda n: None)


def drafting_generation(width: int, max_tree_nodes: int, lag: int = 0) -> Any:
    g = generation()
    g.drafter = RecordingDrafter()
    g.start_chain = g.drafter.start_chain
    g.shape = DraftShape(gamma=4)
    g.config = SimpleNamespace(stream_lead=1, stream_width=width, stream_lag=lag)
    caps = SimpleNamespace(max_context=4096, max_tree_nodes=max_tree_nodes)
    g.session = SimpleNamespace(link=None, capabilities=caps)
    return g


def test_a_chain_shape_drafts_a_fan_as_wide_as_configured_and_a_chain_where_a_fan_does_not_fit() -> None:
    asked = []
    for width, max_tree_nodes in ((4, 64), (4, 12), (1, 64), (4, 7)):
        g = drafting_generation(width, max_tree_nodes)
        Proposer(g, BASE, ROOT)._draft([], BASE, ROOT)
        asked += g.drafter.asked

    assert asked == [
        ("fan", ROOT, 4, 5, 1),  # the shape's chain of 4 plus the lead of 1, below each of the top 4 guesses
        ("fan", ROOT, 4, 3, 1),  # cut to the server's tree limit: 4 x 3 nodes
        ("chain", ROOT, 5),  # width 1: one chain
        ("chain", ROOT, 5),  # no room for 4 chains of 2: one chain
    ]


def test_a_fan_for_a_lag_of_two_leads_two_levels_and_goes_a_token_deeper() -> None:
    asked = []
    for width, max_tree_nodes in ((4, 64), (4, 12), (1, 64)):
        g = drafting_generation(width, max_tree_nodes)
        Proposer(g, BASE, ROOT)._draft([], BASE, ROOT, 2)
        asked += g.drafter.asked

    assert asked == [
        ("fan", ROOT, 4, 6, 2),  # chain 4, the lead of 1 and one more for the second token it must guess
        ("fan", ROOT, 4, 3, 2),  # cut to the server's tree limit: 4 x 3 nodes
        ("chain", ROOT, 6),  # one chain: a token deeper
    ]


def test_the_lag_a_proposer_drafts_for_is_the_configured_one_or_else_measured_from_the_stream() -> None:
    fixed = Proposer(drafting_generation(4, 64, lag=3), BASE, ROOT)
    measured = Proposer(drafting_generation(4, 64), BASE, ROOT)
    assert (fixed._lag(), measured._lag()) == (3, 1)  # nothing measured yet: one step late, as before

    measured.g.pacer.rtt_s = 0.060  # 4g's round trip
    measured.took(part([20], BASE + 1), 0.5)  # the first part: the prompt's way, not a step
    for token in range(21, 26):
        measured.took(part([token], measured.base + 1), 0.060)  # the server steps every 60 ms
    measured.lag.proposed(0.040)  # a proposal went out 40 ms after its part came
    assert measured.lag.step_s == 0.060 and measured._lag() == 2


def test_a_tree_for_a_lag_of_two_grows_a_level_deeper_with_its_top_k_more_nodes() -> None:
    asked = []
    for lag in (1, 2):
        g = drafting_generation(4, 64)
        g.shape = DraftShape.parse_tree("4,4,16")
        Proposer(g, BASE, ROOT)._draft([], BASE, ROOT, lag)
        asked += g.drafter.asked

    assert asked == [("tree", ROOT, 5, 4, 17), ("tree", ROOT, 6, 4, 21)]  # the lead of 1 on top of both
