"""Target answers on a tiny random Llama with a ChatML character tokenizer: multi-turn, windows, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from drafts.data import target_answers as ta
from drafts.data.conversations import Conversation, Turn
from drafts.data.target_answers import AnswerConfig, answer_conversations
from drafts.target.chat import format_chat
from drafts.training.data import load_training_conversations
from tests.chat_tokenizer import TOKENS, ChatTokenizer
from tests.drafts.data.test_batch_decode import greedy_alone
from tests.tiny_targets import tiny_model

STOP = frozenset({1})  # <|im_end|>


def chats() -> list[Conversation]:
    return [
        Conversation(f"c{i}", (Turn("user", q1), Turn("assistant", "old answer."), Turn("user", q2)))
        for i, (q1, q2) in enumerate(
            [("hi", "why?"), ("name a colour.", "and another?"), ("count to five", "again"), ("say yes", "no")]
        )
    ]


@pytest.fixture
def model() -> torch.nn.Module:
    return tiny_model("llama", vocab_size=len(TOKENS), max_position_embeddings=256)


def run(model: torch.nn.Module, out: Path, convs: list[Conversation], **overrides: object) -> ta.Progress:
    options: dict = dict(batch_size=3, max_new_tokens=6, context=120, min_answer_tokens=8, sampled_share=0.0)
    cfg = AnswerConfig(**(options | overrides))
    return answer_conversations(convs, out, model, ChatTokenizer(), STOP, cfg, log=lambda line: None)


def rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_every_user_turn_gets_the_targets_own_greedy_answer_given_its_own_earlier_answers(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    out = tmp_path / "answers.jsonl"
    tokenizer = ChatTokenizer()

    run(model, out, chats())

    written = {row["id"]: row for row in rows(out)}
    assert sorted(written) == ["c0", "c1", "c2", "c3"]
    for conv in chats():
        wire = written[conv.id]["conversations"]
        assert [turn["from"] for turn in wire] == ["human", "gpt", "human", "gpt"]
        history: list[Turn] = []
        for question, answer in ((wire[0], wire[1]), (wire[2], wire[3])):
            history.append(Turn("user", question["value"]))
            expected = greedy_alone(model, format_chat(tokenizer, history), 6, STOP)
            assert answer["value"] == tokenizer.decode(expected, skip_special_tokens=True)
            history.append(Turn("assistant", answer["value"]))
        assert wire[0]["value"] == conv.turns[0].content and wire[2]["value"] == conv.turns[2].content
        assert written[conv.id]["temperature"] == 0.0 and written[conv.id]["source"] == ta.SOURCE


def test_prompt_and_reply_stay_inside_the_training_window(model: torch.nn.Module, tmp_path: Path) -> None:
    out = tmp_path / "answers.jsonl"
    long = Conversation("long", (Turn("user", "tell me a story " * 8), Turn("assistant", "x"), Turn("user", "more")))

    run(model, out, [long, *chats()], context=60, min_answer_tokens=10, max_new_tokens=40)

    tokenizer = ChatTokenizer()
    for conv in load_training_conversations(str(out)):
        rendered = tokenizer.apply_chat_template([{"role": t.role, "content": t.content} for t in conv.turns])
        assert len(rendered) <= 60 + 2  # the reply's stop token and newline close the last turn
    (story,) = [row for row in rows(out) if row["id"] == "long"]
    assert story["conversations"][0]["value"].startswith("tell me a story") and len(story["conversations"]) == 2


def test_a_rerun_skips_written_conversations_and_finishes_the_rest(model: torch.nn.Module, tmp_path: Path) -> None:
    out = tmp_path / "answers.jsonl"
    run(model, out, chats()[:2])

    progress = run(model, out, chats())

    ids = [row["id"] for row in rows(out)]
    assert sorted(ids[:2]) == ["c0", "c1"] and sorted(ids[2:]) == ["c2", "c3"]
    assert progress.conversations == 2


def test_a_past_deadline_writes_nothing_and_a_later_run_does_it_all(model: torch.nn.Module, tmp_path: Path) -> None:
    out = tmp_path / "answers.jsonl"
    cfg = AnswerConfig(batch_size=2, max_new_tokens=4, context=120, min_answer_tokens=8)
    answer_conversations(chats(), out, model, ChatTokenizer(), STOP, cfg, deadline=0.0, log=lambda line: None)
    assert out.read_text() == ""

    run(model, out, chats())

    assert len(rows(out)) == 4


def test_the_sampled_share_is_seeded_and_repeats(model: torch.nn.Module, tmp_path: Path) -> None:
    first, again = tmp_path / "a.jsonl", tmp_path / "b.jsonl"

    run(model, first, chats(), sampled_share=0.5, seed=3)
    run(model, again, chats(), sampled_share=0.5, seed=3)

    by_id = {row["id"]: row for row in rows(first)}
    assert by_id == {row["id"]: row for row in rows(again)}
    assert {row["temperature"] for row in by_id.values()} <= {0.0, 1.0}
    share = AnswerConfig(sampled_share=0.5, seed=3)
    assert [by_id[c.id]["temperature"] for c in chats()] == [ta._new_job(c, share).temperature for c in chats()]


def test_the_cli_answers_only_the_train_split(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked: list[str] = []

    def load_sharegpt(split: str) -> list[Conversation]:
        asked.append(split)
        return chats()

    monkeypatch.setattr("drafts.data.sharegpt.load_sharegpt", load_sharegpt)
    monkeypatch.setattr(
        "drafts.target.loading.load_target",
        lambda spec, device, dtype: _tiny_loaded(),
    )
    out = tmp_path / "sub" / "answers.jsonl"

    code = ta.main(
        ["--out", str(out), "--limit", "3", "--batch-size", "2", "--max-new-tokens", "3", "--context", "100"]
    )

    assert code == 0 and asked == ["train"] and len(rows(out)) == 3


def test_a_bad_config_is_refused_with_its_reason() -> None:
    with pytest.raises(ta.ConfigError, match="min_answer_tokens"):
        AnswerConfig(context=64, min_answer_tokens=64)


def _tiny_loaded():  # type: ignore[no-untyped-def]
    from drafts.target.loading import LoadedTarget, TargetFingerprint

    model = tiny_model("llama", vocab_size=len(TOKENS), max_position_embeddings=256)
    model.generation_config.eos_token_id = 1
    return LoadedTarget(model, ChatTokenizer(), TargetFingerprint("tiny", 3, 32, len(TOKENS), "x"))


@pytest.mark.integration
def test_smollm2_batched_greedy_answers_are_what_moa_bench_ar_decodes(tmp_path: Path) -> None:
    from drafts.decoding.autoregressive import generate_autoregressive
    from drafts.decoding.config import DecodeConfig
    from drafts.target.loading import load_target
    from drafts.target.runner import TargetRunner

    runner = TargetRunner(load_target("smollm2", torch.device("cpu"), torch.float32))
    convs = [
        Conversation("days", (Turn("user", "List the days of the week."),)),
        Conversation("add", (Turn("user", "Write a Python function that adds two numbers."),)),
        Conversation("hi", (Turn("user", "Hi! Who are you?"),)),
    ]
    out = tmp_path / "answers.jsonl"
    cfg = AnswerConfig(batch_size=3, max_new_tokens=24, sampled_share=0.0)

    answer_conversations(convs, out, runner.model, runner.tokenizer, runner.stop_ids, cfg, log=lambda line: None)

    written = {row["id"]: row["conversations"][1]["value"] for row in rows(out)}
    for conv in convs:
        ar = generate_autoregressive(runner, runner.format_chat(conv.turns), DecodeConfig(max_new_tokens=24))
        tokens = [t for t in ar.tokens if t not in runner.stop_ids]
        assert written[conv.id] == runner.tokenizer.decode(tokens, skip_special_tokens=True)


def test_a_stopped_job_keeps_the_answers_of_conversations_in_flight(model: torch.nn.Module, tmp_path: Path) -> None:
    out = tmp_path / "answers.jsonl"
    cfg = AnswerConfig(batch_size=4, max_new_tokens=4, context=120, min_answer_tokens=8, sampled_share=0.0)

    def stop(line: str) -> None:
        raise SystemExit(143)  # as SIGTERM does in main

    with pytest.raises(SystemExit):
        answer_conversations(chats(), out, model, ChatTokenizer(), STOP, cfg, log=stop)

    assert sorted(row["id"] for row in rows(out)) == ["c0", "c1", "c2", "c3"]
    assert all([turn["from"] for turn in row["conversations"]] == ["human", "gpt"] for row in rows(out))


def test_a_batch_holds_the_oldest_job_and_the_prompts_nearest_its_length() -> None:
    conv = chats()[0]
    pending = [
        ta.Job(conv, 0.0, (), [], order=order, prompt=[0] * length)
        for order, length in [(3, 10), (0, 50), (1, 48), (2, 90), (4, 53)]
    ]

    batch = ta._take_batch(pending, 3)

    assert [job.order for job in batch] == [0, 1, 4]
    assert sorted(job.order for job in pending) == [2, 3]


def test_the_cli_answers_a_prompts_file_in_its_order_without_the_sharegpt_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def no_sharegpt(split: str) -> list[Conversation]:
        raise AssertionError("--prompts must not read ShareGPT")

    monkeypatch.setattr("drafts.data.sharegpt.load_sharegpt", no_sharegpt)
    monkeypatch.setattr("drafts.target.loading.load_target", lambda spec, device, dtype: _tiny_loaded())
    prompts, out = tmp_path / "prompts.jsonl", tmp_path / "answers.jsonl"
    written = ta.write_prompts(prompts, reversed(chats()))

    code = ta.main(["--out", str(out), "--prompts", str(prompts), "--limit", "2", "--batch-size", "2",
                    "--max-new-tokens", "3", "--context", "100"])  # fmt: skip

    expected = [c.id for c in reversed(chats())][:2]
    assert written == len(chats()) and code == 0 and sorted(r["id"] for r in rows(out)) == sorted(expected)
    assert [c.id for c in ta.read_prompts(prompts)] == [c.id for c in reversed(chats())]
    assert all(t.role != "assistant" for c in ta.read_prompts(prompts) for t in c.turns)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the sampled share draws on the GPU)")
def test_sampled_answers_draw_on_a_cuda_target(tmp_path: Path) -> None:
    model = tiny_model("llama", vocab_size=len(TOKENS), max_position_embeddings=256).to("cuda")
    progress = run(model, tmp_path / "answers.jsonl", chats(), sampled_share=1.0)
    assert progress.new_tokens > 0 and all(r["temperature"] == 1.0 for r in rows(tmp_path / "answers.jsonl"))
