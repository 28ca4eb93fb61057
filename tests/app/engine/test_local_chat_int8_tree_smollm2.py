"""The local engine drafting small EAGLE-2 trees with the app's CPU draft (the shipped MoA, int8 layers) on
the real SmolLM2 as ``--local`` runs it on a CPU (integration): the answer is plain decoding, and trees get drafts
accepted. The CPU's small trees are measured in ``drafts/bench/results/2026-12-02-s8/cpu-shapes``.
"""

from __future__ import annotations

import pytest

from app.engine.chat import Message
from app.engine.events import EngineEvent, Shown
from app.engine.local_chat import LocalChatEngine
from app.engine.local_models import LocalConfig, load_models
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.drafters.base import DraftShape
from drafts.locations import shipped_checkpoint
from drafts.neural.drafter import NeuralDrafter
from drafts.neural.quantize import is_quantized
from drafts.target.runner import TargetRunner
from tests.app.engine.test_local_chat import ar_tokens, collect, finished, run

CHAT: list[Message] = [Message("user", "Name three rivers and say where each one is.")]


@pytest.fixture(scope="module")
def smollm2_int8() -> tuple[TargetRunner, NeuralDrafter]:
    checkpoint = shipped_checkpoint("SmolLM2-135M-Instruct", "moa")
    runner, drafter = load_models(LocalConfig(draft="moa", checkpoint=checkpoint, device="cpu", int8_on_cpu=True))
    assert isinstance(drafter, NeuralDrafter) and is_quantized(drafter.model)  # the app's CPU draft
    return runner, drafter


@pytest.mark.integration
@pytest.mark.parametrize("tree", ["2,2,3", "3,2,4"])
def test_smollm2_with_the_int8_moa_on_a_small_tree_answers_as_plain_decoding(
    smollm2_int8: tuple[TargetRunner, NeuralDrafter], tree: str
) -> None:
    runner, drafter = smollm2_int8
    engine = LocalChatEngine.of(runner, drafter)
    decode = DecodeConfig(max_new_tokens=32, shape=DraftShape.parse_tree(tree))

    async def scenario() -> list[EngineEvent]:
        await engine.open()
        events = await collect(engine, CHAT, decode)
        await engine.close()
        return events

    events = run(scenario)
    end, shown = finished(events), Shown()
    for event in events:
        shown.apply(event)

    assert list(end.tokens) == ar_tokens(runner, CHAT, decode)
    assert shown.text == end.text
    assert shown.count(TokenSource.DRAFT_ACCEPTED) == end.stats.accepted > 0
