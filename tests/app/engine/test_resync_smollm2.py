"""Re-sync end to end: SmolLM2-135M on a real loopback moa-server, the shipped MoA draft on the client,
the answer begun offline by the bundled SmolLM2 GGUF (no verifier yet), the verifier started once the
offline budget is written. The GGUF's first token is not the target's, so the repair keeps nothing of
its span; the tokens after it come back as lookup chains (app.engine.resync_round) and some are kept.
At T = 0 the answer is the target's own either way."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from app.engine.client_draft import ClientDraft
from app.engine.events import OfflineBudgetReached, Repaired
from app.engine.sync import EngineThread
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.drafters.base import DraftShape
from drafts.locations import shipped_checkpoint, smollm2_gguf
from drafts.neural.drafter import NeuralDrafter
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import draft_id, load_draft
from server_stub.backend.draft_memory import MemoryCompressor
from tests.app.engine.scenario import Recording, assert_provenance_sums_up, engine_config
from tests.app.engine.servers import ServerThread, free_port

pytestmark = pytest.mark.integration

NEW_TOKENS = 64
BUDGET = 24  # offline tokens the GGUF writes before the verifier is started
QUESTION = "List the days of the week, one per line."  # the GGUF's 24: 0 kept by the repair, 13 re-synced (chain)


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return TargetRunner(load_target(None, torch.device("cpu"), torch.float32))


def answer_begun_offline(runner: TargetRunner, prompt: list[int], shape: DraftShape, **options: Any) -> Recording:
    """One generation that starts with no verifier; the server comes up at OfflineBudgetReached."""
    checkpoint = shipped_checkpoint(runner.fingerprint.name, "moa")
    draft = ClientDraft.of(NeuralDrafter(load_draft(checkpoint, runner)), draft_id(checkpoint), runner)
    port, servers, recording = free_port(), list[ServerThread](), Recording()
    config = engine_config(port, offline_model=smollm2_gguf(), offline_budget=BUDGET, **options)
    try:
        with EngineThread(config, draft) as engine:
            for event in engine.stream(prompt, DecodeConfig(max_new_tokens=NEW_TOKENS, shape=shape)):
                recording.add(event)
                if isinstance(event, OfflineBudgetReached) and not servers:
                    compressor = MemoryCompressor.load(checkpoint, runner)
                    servers.append(ServerThread(runner, compressor, port=port).start())
    finally:
        for server in servers:
            server.stop()
    return recording


@pytest.mark.parametrize("shape", [DraftShape(), DraftShape.parse_tree("4,4,16")], ids=["chain", "tree"])
def test_offline_tokens_after_a_rejection_are_re_synced_and_the_answer_is_the_targets(
    runner: TargetRunner, shape: DraftShape
) -> None:
    prompt = runner.format_chat([{"role": "user", "content": QUESTION}])
    expected = generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=NEW_TOKENS)).tokens

    recording = answer_begun_offline(runner, prompt, shape)

    finished = recording.finished
    assert list(finished.tokens) == expected
    assert_provenance_sums_up(recording)
    (repaired,) = recording.of(Repaired)
    assert (repaired.start, repaired.end, repaired.kept) == (0, BUDGET, 0)  # the first offline token was refused
    stats = finished.stats
    assert stats.offline_tokens == BUDGET and stats.kept_after_repair == 0
    assert 0 < stats.kept_after_resync <= BUDGET  # the rejected token may come back too (a word the target added)
    assert recording.shown().count(TokenSource.DRAFT_ACCEPTED) == stats.accepted >= stats.kept_after_resync
    kept, rounds = stats.kept_after_resync, stats.verify_rounds
    print(f"\n{shape.describe()}: {kept} of {BUDGET} offline tokens re-synced, {rounds} verify rounds")


def test_without_re_sync_the_same_answer_keeps_no_offline_token(runner: TargetRunner) -> None:
    prompt = runner.format_chat([{"role": "user", "content": QUESTION}])
    expected = generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=NEW_TOKENS)).tokens

    recording = answer_begun_offline(runner, prompt, DraftShape(), resync=None)

    assert list(recording.finished.tokens) == expected
    assert recording.finished.stats.kept_after_repair == recording.finished.stats.kept_after_resync == 0
