"""At T > 0 over a slow link the engine sends drafted tokens without their proposals q: lossless
(the chi-square check of the core's acceptance tests) and a few bytes a token instead of ~V floats."""

from __future__ import annotations

import torch

from app.engine.events import Finished
from app.engine.sync import EngineThread
from drafts.decoding.config import DecodeConfig
from drafts.net import LinkProfile, ShaperThread, preset
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from tests.app.engine.scenario import PROMPT, SERVER_RUNNER, client_draft, engine_config
from tests.app.engine.servers import ServerThread
from tests.drafts.test_acceptance import PLAIN, assert_lossless, sampled_chain

SAMPLED = DecodeConfig(max_new_tokens=24, sampling=SamplingConfig(temperature=1.0, seed=3))


def sampled_chain_sent_without_q(prefix: tuple[int, ...], cfg: SamplingConfig, generator: torch.Generator) -> DraftTree:
    """The tokens of a chain sampled from q, verified as deterministic proposals (q = None)."""
    return DraftTree.chain(list(sampled_chain(prefix, cfg, generator).tokens))


def test_a_sampled_chain_sent_without_its_proposals_gives_tokens_distributed_as_the_target() -> None:
    assert_lossless(sampled_chain_sent_without_q, PLAIN, seed=5)


def generate(profile: LinkProfile, q_max_rtt_ms: float) -> Finished:
    with (
        ServerThread(SERVER_RUNNER) as server,
        ShaperThread(upstream_port=server.port, profile=profile) as link,
        EngineThread(engine_config(link.port, q_max_rtt_ms=q_max_rtt_ms), client_draft("eagle")) as engine,
    ):
        return engine.generate(PROMPT, SAMPLED)


def test_at_a_temperature_proposals_go_up_on_a_fast_link_and_not_on_a_slow_one() -> None:
    # Thresholds far from each link's round trip (~1 ms and 120 ms), so a busy machine cannot blur them.
    fast, slow = generate(preset("lan"), q_max_rtt_ms=200), generate(LinkProfile("slow", latency_ms=60), 50)
    vocab = SERVER_RUNNER.config.vocab_size
    assert len(fast.tokens) == len(slow.tokens) == 24
    per_round = [f.stats.bytes_up / f.stats.verify_rounds for f in (fast, slow)]
    assert per_round[0] - per_round[1] > 4 * vocab / 2  # float32 q rows (V each) in most fast rounds, none slow
