"""What the engine tests share: a tiny target on each end, drafts of every kind, a recorder of events.

The server and the client each get their own runner over identical weights (the same seed), as
two machines would; the client uses its runner only for the draft's embeddings and LM head.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig, LinkConfig
from app.engine.events import EngineEvent, Finished, Shown, TokenGenerated
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.moa.model import MoADraft
from drafts.neural.drafter import NeuralDrafter
from drafts.target.runner import TargetRunner
from server_stub.backend.draft_memory import MemoryCompressor
from tests.app.engine.target_draft import TargetAsDraft
from tests.tiny_drafts import random_draft, tiny_llama, tiny_target_runner
from tests.tiny_targets import random_tokens

SERVER_RUNNER = tiny_target_runner(tiny_llama())
CLIENT_RUNNER = tiny_target_runner(tiny_llama())
PROMPT = random_tokens(12, seed=3)
MOA_ID = "moa-tiny-test"


def reference(new_tokens: int, prompt: list[int] = PROMPT) -> list[int]:
    """The target's own greedy continuation."""
    return generate_autoregressive(SERVER_RUNNER, prompt, DecodeConfig(max_new_tokens=new_tokens)).tokens


def client_draft(kind: str) -> ClientDraft:
    """A random draft of ``kind`` ("moa", "eagle", "independent") or the perfect "target" draft."""
    if kind == "target":
        model: Any = TargetAsDraft(tiny_target_runner(tiny_llama()))
        return ClientDraft.of(NeuralDrafter(model), "target-as-draft", CLIENT_RUNNER)
    draft_id = MOA_ID if kind == "moa" else f"{kind}-tiny-test"
    return ClientDraft.of(NeuralDrafter(random_draft(kind, CLIENT_RUNNER, seed=1)), draft_id, CLIENT_RUNNER)


def moa_compressor() -> MemoryCompressor:
    """The server-side part of the client's MoA draft (the same seeded weights)."""
    draft = random_draft("moa", SERVER_RUNNER, seed=1)
    assert isinstance(draft, MoADraft)
    return MemoryCompressor(draft, MOA_ID)


def engine_config(port: int, **options: Any) -> EngineConfig:
    link = {k: options.pop(k) for k in list(options) if k in LinkConfig.__dataclass_fields__}
    return EngineConfig(LinkConfig(f"ws://127.0.0.1:{port}", **link), **options)


@dataclass
class Recording:
    """Every event of a generation with the time it reached the consumer."""

    events: list[tuple[float, EngineEvent]] = field(default_factory=list)

    def add(self, event: EngineEvent) -> None:
        self.events.append((time.perf_counter(), event))

    def of(self, kind: type) -> list[Any]:
        return [e for _, e in self.events if isinstance(e, kind)]

    def first(self, kind: type) -> tuple[float, Any]:
        return next((t, e) for t, e in self.events if isinstance(e, kind))

    @property
    def finished(self) -> Finished:
        (finished,) = self.of(Finished)
        return finished

    def shown(self) -> Shown:
        view = Shown()
        for _, event in self.events:
            view.apply(event)
        return view

    def offline_times(self) -> list[float]:
        return [t for t, e in self.events if isinstance(e, TokenGenerated) and e.source is TokenSource.OFFLINE]


def assert_provenance_sums_up(recording: Recording) -> None:
    """The output is accepted drafts plus the target's own tokens, and the statistics agree."""
    finished, view = recording.finished, recording.shown()
    stats = finished.stats
    assert view.tokens == list(finished.tokens)
    assert view.count(TokenSource.OFFLINE) == stats.unverified == 0
    assert view.count(TokenSource.DRAFT_ACCEPTED) == stats.accepted
    assert view.count(TokenSource.TARGET) == stats.target
    assert stats.accepted + stats.target == stats.new_tokens == len(finished.tokens)


def runner_pair() -> tuple[TargetRunner, TargetRunner]:
    return SERVER_RUNNER, CLIENT_RUNNER
