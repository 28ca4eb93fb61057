from __future__ import annotations

import json
from pathlib import Path

import pytest

from drafts.data import regenerate as regen
from drafts.data.conversations import Conversation, Turn
from drafts.data.regenerate import Reply, regenerate
from drafts.errors import DatasetError
from drafts.locations import smollm2_gguf


class FakeTarget:
    """Answers with a numbered echo of the question and records every history it was shown."""

    def __init__(self, fits: int = 99) -> None:
        self.seen: list[tuple[Turn, ...]] = []
        self.fits = fits  # how many user turns fit the context before it overflows

    def __call__(self, messages: tuple[Turn, ...]) -> Reply | None:
        self.seen.append(messages)
        if sum(turn.role == "user" for turn in messages) > self.fits:
            return None
        return Reply(messages, f"answer to {messages[-1].content}", n_tokens=3)


def chat(conv_id: str, *contents: str, system: str | None = None) -> Conversation:
    turns = [Turn("system", system)] if system else []
    for n, content in enumerate(contents):
        turns.append(Turn("user" if n % 2 == 0 else "assistant", content))
    return Conversation(conv_id, tuple(turns))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_user_turn_is_answered_given_the_regenerated_history(tmp_path: Path) -> None:
    target = FakeTarget()
    out = tmp_path / "regen.jsonl"
    conv = chat("a", "q1", "old1", "q2", "old2", "q3", system="sys")

    regenerate([conv], out, temperature=0.0, max_user_turns=2, progress=False, reply_fn=target)

    assert target.seen == [
        (Turn("system", "sys"), Turn("user", "q1")),
        (Turn("system", "sys"), Turn("user", "q1"), Turn("assistant", "answer to q1"), Turn("user", "q2")),
    ]
    assert read_jsonl(out) == [
        {
            "id": "a",
            "conversations": [
                {"from": "system", "value": "sys"},
                {"from": "human", "value": "q1"},
                {"from": "gpt", "value": "answer to q1"},
                {"from": "human", "value": "q2"},
                {"from": "gpt", "value": "answer to q2"},
            ],
            "temperature": 0.0,
        }
    ]


def test_rerun_skips_the_conversations_already_written(tmp_path: Path) -> None:
    out = tmp_path / "regen.jsonl"
    regenerate([chat("a", "q")], out, temperature=0.7, progress=False, reply_fn=FakeTarget())
    target = FakeTarget()

    regenerate([chat("a", "q"), chat("b", "r")], out, temperature=0.7, progress=False, reply_fn=target)

    assert [messages[-1].content for messages in target.seen] == ["r"]
    assert [row["id"] for row in read_jsonl(out)] == ["a", "b"]


def test_torn_last_line_is_cut_off_and_its_conversation_redone(tmp_path: Path) -> None:
    out = tmp_path / "regen.jsonl"
    regenerate([chat("a", "q")], out, temperature=0.0, progress=False, reply_fn=FakeTarget())
    with out.open("a", encoding="utf-8") as file:
        file.write('{"id": "b", "conversations": [{"fr')  # the process died mid-write

    regenerate([chat("a", "q"), chat("b", "r")], out, temperature=0.0, progress=False, reply_fn=FakeTarget())

    assert [row["id"] for row in read_jsonl(out)] == ["a", "b"]


def test_corrupt_line_before_the_end_is_refused_with_a_fix(tmp_path: Path) -> None:
    out = tmp_path / "regen.jsonl"
    out.write_text('{"id": "a"}\nnot json\n{"id": "c"}\n', encoding="utf-8")

    with pytest.raises(DatasetError, match="line 2 .*delete that line"):
        regenerate([chat("b", "q")], out, temperature=0.0, progress=False, reply_fn=FakeTarget())


def test_history_that_outgrows_the_context_keeps_the_turns_that_fitted(tmp_path: Path) -> None:
    out = tmp_path / "regen.jsonl"

    conv = chat("a", "q1", "x", "q2")

    regenerate([conv], out, temperature=0.0, progress=False, reply_fn=FakeTarget(fits=1))

    assert [turn["value"] for turn in read_jsonl(out)[0]["conversations"]] == ["q1", "answer to q1"]


def test_conversation_whose_first_question_cannot_fit_is_not_written(tmp_path: Path) -> None:
    out = tmp_path / "regen.jsonl"

    regenerate([chat("a", "huge")], out, temperature=0.0, progress=False, reply_fn=FakeTarget(fits=0))

    assert out.read_text(encoding="utf-8") == ""


def test_cli_regenerates_the_first_limit_conversations_of_the_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    splits = {"train": [chat("a", "q"), chat("b", "r"), chat("c", "s")], "heldout": []}
    monkeypatch.setattr(regen, "load_sharegpt", lambda split: splits[split])
    monkeypatch.setattr(regen, "LlamaReplier", lambda *args, **kwargs: FakeTarget())
    out = tmp_path / "sub" / "regen.jsonl"

    code = regen.main(["--temperature", "0", "--limit", "2", "--out", str(out)])

    assert code == 0
    assert [row["id"] for row in read_jsonl(out)] == ["a", "b"]


def test_cli_refuses_a_negative_temperature(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        regen.main(["--temperature", "-1", "--out", str(tmp_path / "x.jsonl")])


@pytest.fixture(scope="module")
def smollm2() -> regen.LlamaReplier:
    pytest.importorskip("llama_cpp")
    return regen.LlamaReplier(smollm2_gguf(), temperature=0.0, max_new_tokens=8, n_threads=1, seed=0)


@pytest.mark.integration
def test_prompt_matches_what_transformers_apply_chat_template_produces(smollm2: regen.LlamaReplier) -> None:
    from transformers import AutoTokenizer

    gguf = smollm2_gguf()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    histories = [
        (Turn("user", "Hello there"),),
        (Turn("system", "Answer in French."), Turn("user", "Why?\n\n  Indented  ")),
        (Turn("user", "q1"), Turn("assistant", "a1 with `code`"), Turn("user", "q2 é 中文")),
    ]
    for history in histories:
        rows = [{"role": turn.role, "content": turn.content} for turn in history]
        expected = tokenizer.apply_chat_template(rows, add_generation_prompt=True, tokenize=False)

        assert smollm2.template.render(history) == expected
        assert smollm2.tokenize(expected) == tokenizer(expected, add_special_tokens=False)["input_ids"]


@pytest.mark.integration
def test_target_regenerates_a_short_conversation_for_real(smollm2: regen.LlamaReplier, tmp_path: Path) -> None:
    out = tmp_path / "regen.jsonl"
    conv = chat("real", "What is 2 + 2?", "4")

    regenerate([conv], out, gguf_path=smollm2_gguf(), temperature=0.0, max_new_tokens=8, progress=False)

    (row,) = read_jsonl(out)
    assert row["id"] == "real" and row["temperature"] == 0.0
    assert [turn["from"] for turn in row["conversations"]] == ["human", "gpt"]
    reply = row["conversations"][1]["value"]
    assert reply.strip()
    assert len(smollm2.tokenize(reply)) <= 9  # 8 generated; re-tokenising the text may split one


def test_cli_regenerates_the_conversations_of_a_sharegpt_style_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "chats.jsonl"
    rows = [
        {"id": name, "conversations": [{"from": "human", "value": f"question {name}"}, {"from": "gpt", "value": "old"}]}
        for name in "xyz"
    ]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    monkeypatch.setattr(regen, "LlamaReplier", lambda *args, **kwargs: FakeTarget())
    out = tmp_path / "regen.jsonl"

    code = regen.main(["--temperature", "0", "--data", str(source), "--limit", "2", "--out", str(out)])

    assert code == 0
    written = read_jsonl(out)
    assert [row["id"] for row in written] == ["x", "y"]
    assert written[0]["conversations"][-1]["value"] == "answer to question x"


def test_cli_with_a_missing_data_file_is_an_error_that_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = regen.main(
        ["--temperature", "0", "--data", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o.jsonl")]
    )

    assert code == 2
    assert "none.jsonl does not exist" in capsys.readouterr().err
