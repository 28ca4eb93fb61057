"""The real default target, SmolLM2-135M-Instruct, on the CPU in fp32: every drafter is lossless."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from drafts.bench import cli
from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.decoding.speculative import generate
from drafts.drafters.base import DraftShape
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.drafters.oracle import OracleDrafter
from drafts.errors import ContextOverflowError
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from tests.tree_drafter import TargetTop2TreeDrafter

pytestmark = pytest.mark.integration

CHATS = [
    [{"role": "user", "content": "List the days of the week."}],
    [{"role": "user", "content": "Write a Python function that adds two numbers."}],
]
CONFIG = DecodeConfig(max_new_tokens=32, shape=DraftShape(gamma=4))
JSON_KEYS = {
    "tau",
    "accept_rate",
    "tokens_per_s",
    "speedup",
    "target_forwards",
    "new_tokens",
    "per_position_acceptance",
    "draft_ms_per_round",
    "verify_ms_per_round",
    "identical_to_ar",
}


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    return TargetRunner(load_target(None, torch.device("cpu"), torch.float32))


def test_the_default_target_is_smollm2(runner: TargetRunner) -> None:
    assert runner.fingerprint.name == "SmolLM2-135M-Instruct"
    assert runner.fingerprint.num_layers == 30
    assert runner.context_length == 8192


def test_chat_formatting_ends_with_the_assistant_header(runner: TargetRunner) -> None:
    tokens = runner.format_chat(CHATS[0])

    text = runner.tokenizer.decode(tokens)
    assert text.endswith("<|im_start|>assistant\n")
    assert "List the days of the week." in text
    assert runner.tokenizer.convert_tokens_to_ids("<|im_end|>") in runner.stop_ids


@pytest.mark.parametrize("chat", CHATS, ids=["days", "python"])
def test_every_drafter_gives_the_autoregressive_tokens_at_temperature_zero(
    runner: TargetRunner, chat: list[dict[str, str]]
) -> None:
    prompt = runner.format_chat(chat)
    ar = generate_autoregressive(runner, prompt, CONFIG)
    drafters = {
        "lookup": PromptLookupDrafter(),
        "oracle": OracleDrafter(ar.tokens),
        "tree": TargetTop2TreeDrafter(runner),
    }

    results = {name: generate(runner, drafter, prompt, CONFIG) for name, drafter in drafters.items()}

    assert len(ar.tokens) > 8  # a real answer, not an immediate end of turn
    for name, gen in results.items():
        assert gen.tokens == ar.tokens, (
            f"{name}: {runner.decode(gen.tokens)!r} vs {runner.decode(ar.tokens)!r}"
        )
        assert gen.stop == ar.stop, name
    assert results["oracle"].target_forwards < ar.target_forwards / 2
    assert results["tree"].target_forwards < ar.target_forwards / 2


def test_a_prompt_longer_than_the_context_is_refused(
    runner: TargetRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = runner.format_chat(CHATS[0])
    monkeypatch.setattr(runner, "context_length", len(prompt) - 1)

    with pytest.raises(ContextOverflowError, match="shorten it"):
        generate_autoregressive(runner, prompt, CONFIG)
    with pytest.raises(ContextOverflowError, match="shorten it"):
        generate(runner, PromptLookupDrafter(), prompt, CONFIG)
    with pytest.raises(ContextOverflowError, match="exceed SmolLM2-135M-Instruct's context"):
        runner.extend(runner.new_session(), prompt)


def test_moa_bench_writes_every_statistic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = tmp_path / "one.jsonl"
    dataset.write_text('{"prompt": "What is the capital of France?"}\n', encoding="utf-8")
    out = tmp_path / "bench.json"

    options = ["--method", "ar,lookup,oracle", "--max-new-tokens", "8", "--device", "cpu"]
    code = cli.main([*options, "--dataset", str(dataset), "--json", str(out)])

    assert code == 0, capsys.readouterr().err
    written = json.loads(out.read_text())
    assert set(written["methods"]) == {"ar", "lookup", "oracle"}
    for name, stats in written["methods"].items():
        assert set(stats) >= JSON_KEYS, name
    assert written["methods"]["lookup"]["identical_to_ar"] is True
    assert written["methods"]["oracle"]["identical_to_ar"] is True
    assert written["config"]["target"]["name"] == "SmolLM2-135M-Instruct"
