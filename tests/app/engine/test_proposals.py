"""At T > 0 the engine samples each drafted token from its top-K proposal and sends that proposal
sparse (K ids + K float16 weights) on every link: lossless (the chi-square checks of the core's
acceptance tests, with sparse q' and without q), and well under a kilobyte a drafted token instead
of ~V floats, so no frame can hold the keepalive's pong on 3g. An EAGLE-2 tree sends no q: its
candidates are deterministic proposals (app.engine.online says why)."""

from __future__ import annotations

import torch

from app.engine.events import Finished, LinkLost
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.drafters.base import DraftShape
from drafts.net import LinkProfile, ShaperThread, preset
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from tests.app.engine.scenario import PROMPT, SERVER_RUNNER, client_draft, engine_config
from tests.app.engine.servers import ServerThread
from tests.drafts.test_acceptance import PLAIN, assert_lossless, sampled_chain

SAMPLED = DecodeConfig(max_new_tokens=24, sampling=SamplingConfig(temperature=1.0, seed=3))
PER_DRAFTED_TOKEN_BOUND = 1000  # bytes up; a dense float32 q alone is 4 * V


def sampled_chain_sent_without_q(prefix: tuple[int, ...], cfg: SamplingConfig, generator: torch.Generator) -> DraftTree:
    """The tokens of a chain sampled from q, verified as deterministic proposals (q = None)."""
    return DraftTree.chain(list(sampled_chain(prefix, cfg, generator).tokens))


def test_a_sampled_chain_sent_without_its_proposals_gives_tokens_distributed_as_the_target() -> None:
    assert_lossless(sampled_chain_sent_without_q, PLAIN, seed=5)


def generate(profile: LinkProfile, q_top_k: int) -> tuple[Finished, int]:
    """(the Finished event, link losses) of one T = 1 generation through ``profile``."""
    with (
        ServerThread(SERVER_RUNNER) as server,
        ShaperThread(upstream_port=server.port, profile=profile) as link,
        EngineThread(engine_config(link.port, q_top_k=q_top_k), client_draft("eagle")) as engine,
    ):
        events = list(engine.stream(PROMPT, SAMPLED))
    finished = events[-1]
    assert isinstance(finished, Finished)
    return finished, sum(isinstance(e, LinkLost) for e in events)


def bytes_per_drafted_token(finished: Finished) -> float:
    stats = finished.stats
    return stats.bytes_up / (stats.mean_gamma * stats.verify_rounds)


def test_at_a_temperature_sparse_proposals_go_up_on_every_link_under_a_kilobyte_a_token() -> None:
    sparse_lan, _ = generate(preset("lan"), q_top_k=32)
    sparse_3g, losses = generate(preset("3g"), q_top_k=32)

    assert len(sparse_lan.tokens) == len(sparse_3g.tokens) == 24
    assert losses == 0 and sparse_3g.stats.offline_tokens == 0
    for finished in (sparse_lan, sparse_3g):
        assert bytes_per_drafted_token(finished) < PER_DRAFTED_TOKEN_BOUND  # frame headers included
        assert bytes_per_drafted_token(finished) > 32 * (4 + 2)  # the 32 ids and weights really go up


def test_at_a_temperature_a_tree_goes_up_without_q_its_top_k_candidates_being_deterministic_proposals() -> None:
    # EAGLE-2's candidates are chosen (the draft's top-k), not sampled: each is verified as q = δ_x,
    # exact at any temperature (tests/drafts/test_acceptance.py: the deterministic top-k tree's
    # chi-square). A q would make min(1, p/q) wrong for a token that was never drawn from it.
    shape = DraftShape.parse_tree("3,2,6")
    sampled_tree = DecodeConfig(max_new_tokens=24, sampling=SamplingConfig(temperature=1.0, seed=3), shape=shape)
    with (
        ServerThread(SERVER_RUNNER) as server,
        EngineThread(engine_config(server.port, q_top_k=32), client_draft("eagle")) as engine,
    ):
        events = list(engine.stream(PROMPT, sampled_tree))

    finished = events[-1]
    assert isinstance(finished, Finished) and len(finished.tokens) == 24
    assert not any(isinstance(e, LinkLost) for e in events) and finished.stats.offline_tokens == 0
    stats = finished.stats
    per_round = (stats.bytes_up - 8 * len(PROMPT)) / stats.verify_rounds  # less the prompt's prefill
    assert per_round < shape.tree_total * 32 * (4 + 2)  # the 6 nodes' top-32 q alone would be 1,152 bytes
