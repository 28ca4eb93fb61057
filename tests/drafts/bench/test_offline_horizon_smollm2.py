"""The offline-horizon harness on the real SmolLM2 target with the shipped MoA draft and the bundled GGUF."""

from __future__ import annotations

import pytest
import torch

from drafts.bench.offline_continuation import ContinuerSpec, build_continuer
from drafts.bench.offline_horizon import HorizonConfig, reference_answer, run_offline_horizon
from drafts.bench.offline_stats import kept_tokens
from drafts.locations import smollm2_gguf
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner

pytestmark = pytest.mark.integration

CHAT = [{"role": "user", "content": "List the days of the week."}]


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return TargetRunner(load_target(None, torch.device("cpu"), torch.float32))


def test_the_target_keeps_everything_and_the_draft_and_gguf_counts_match_their_tokens(runner: TargetRunner) -> None:
    prompt = runner.format_chat(CHAT)
    config = HorizonConfig(("target", "moa", "gguf"), horizons=(4, 8), cuts=(3,))
    continuers = [build_continuer(ContinuerSpec(m, smollm2_gguf()), runner) for m in config.methods]
    # a fresh GGUF reads the context in one batch, as the run's did at its only cut (llama.cpp's
    # logits depend a little on how a context was split into evaluations: near-ties can flip)
    gguf = build_continuer(ContinuerSpec("gguf", smollm2_gguf()), runner)
    try:
        run = run_offline_horizon(runner, [prompt], continuers, config)
        answer = reference_answer(runner, prompt, config.answer_tokens)
        context, after = prompt + answer[:3], answer[3:11]
        gguf_tokens = gguf.continue_after(context, 8)
    finally:
        for c in [*continuers, gguf]:
            c.close()

    methods = run.to_json()["methods"]
    assert methods["target"]["offline"]["fraction"] == {"4": 1.0, "8": 1.0}
    assert run.samples[0]["kept"]["gguf"] == kept_tokens(gguf_tokens, after)
    moa = methods["moa"]
    assert moa["offline"]["survival_by_depth"][0] == moa["with_target_state"]["survival_by_depth"][0]
    assert run.samples[0]["kept"]["moa"] == moa["offline"]["distribution"].index(1)
