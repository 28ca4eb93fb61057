"""The real thing, end to end: SmolLM2-135M on a moa-server, the shipped MoA draft on the client,
the link shaper on ``lan``, a cut bridged by the bundled SmolLM2 GGUF through llama.cpp."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from app.engine.client_draft import ClientDraft
from app.engine.events import LinkLost, LinkRestored, Repaired, TokenGenerated
from app.engine.sync import EngineThread
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.locations import shipped_checkpoint, smollm2_gguf
from drafts.net import ShaperThread, preset
from drafts.neural.drafter import NeuralDrafter
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from drafts.training.checkpoint import draft_id, load_draft
from server_stub.backend.draft_memory import MemoryCompressor
from tests.app.engine.scenario import Recording, assert_provenance_sums_up, engine_config
from tests.app.engine.servers import ServerThread

pytestmark = pytest.mark.integration

NEW_TOKENS = 48
CUT_AT = 12  # output position after which the link goes, for CUT_S seconds
CUT_S = 0.8


def test_smollm2_with_the_shipped_moa_draft_over_lan_survives_a_cut_with_the_gguf_model() -> None:
    runner = TargetRunner(load_target(None, torch.device("cpu"), torch.float32))
    checkpoint = shipped_checkpoint(runner.fingerprint.name, "moa")
    # One process plays both machines: the server and the client share the target's weights
    # (the client reads only the embeddings and LM head), each with its own copy of the draft.
    draft = ClientDraft.of(NeuralDrafter(load_draft(checkpoint, runner)), draft_id(checkpoint), runner)
    prompt = runner.format_chat([{"role": "user", "content": "List the days of the week, one per line."}])
    expected = generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=NEW_TOKENS)).tokens
    recording, cut = Recording(), {}
    with (
        ServerThread(runner, MemoryCompressor.load(checkpoint, runner), resume_grace=30) as server,
        ShaperThread(upstream_port=server.port, profile=preset("lan")) as link,
        EngineThread(engine_config(link.port, offline_model=smollm2_gguf()), draft) as engine,
    ):
        for event in engine.stream(prompt, DecodeConfig(max_new_tokens=NEW_TOKENS)):
            recording.add(event)
            if isinstance(event, TokenGenerated) and event.position >= CUT_AT and not cut:
                link.set_profile(preset("offline"))
                cut["at"] = time.perf_counter()
                threading.Timer(CUT_S, lambda: link.set_profile(preset("lan"))).start()

    finished = recording.finished
    assert list(finished.tokens) == expected
    assert_provenance_sums_up(recording)
    lost_at, lost = recording.first(LinkLost)
    assert lost.continuing_with == "gguf:" + smollm2_gguf().name and lost_at - cut["at"] < 0.5
    offline = recording.offline_times()
    assert offline and max(b - a for a, b in zip([lost_at, *offline], offline, strict=False)) < 0.5
    assert recording.of(LinkRestored)[0].resumed and recording.of(Repaired)
    stats = finished.stats
    print(
        f"\nSmolLM2 + MoA over lan with a {CUT_S} s cut: {stats.new_tokens} tokens in {stats.wall_s:.2f} s, "
        f"ttft {stats.ttft_s:.2f} s, {stats.verify_rounds} verify rounds, mean chain {stats.mean_gamma:.1f}, "
        f"accepted {stats.accepted} / target {stats.target}, {stats.bytes_up} B up / {stats.bytes_down} B down; "
        f"cut noticed in {1e3 * (lost_at - cut['at']):.1f} ms, {stats.offline_tokens} offline tokens "
        f"({stats.kept_after_repair} kept after repair), longest offline gap "
        f"{1e3 * max(b - a for a, b in zip([lost_at, *offline], offline, strict=False)):.0f} ms"
    )
