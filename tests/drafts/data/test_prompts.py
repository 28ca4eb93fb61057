from __future__ import annotations

import json
from pathlib import Path

import pytest

from drafts.data import prompts
from drafts.data.conversations import Conversation, Turn
from drafts.data.prompts import BenchPrompt, load_prompts
from drafts.data.sharegpt import HELDOUT_SIZE
from drafts.errors import ConfigError, DatasetError


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_humaneval_gives_164_code_completion_requests() -> None:
    loaded = load_prompts("humaneval")

    assert len(loaded) == 164
    first = loaded[0]
    assert first.id == "HumanEval/0"
    assert len(first.messages) == 1 and first.messages[0].role == "user"
    assert first.messages[0].content.startswith("Complete the following Python function:\n```python\n")
    assert "def has_close_elements(" in first.messages[0].content
    assert first.messages[0].content.endswith('"""\n```')


def test_limit_keeps_the_first_prompts() -> None:
    assert [prompt.id for prompt in load_prompts("humaneval", limit=2)] == ["HumanEval/0", "HumanEval/1"]


def test_skip_leaves_out_the_first_prompts_before_the_limit() -> None:
    assert [prompt.id for prompt in load_prompts("humaneval", limit=2, skip=3)] == ["HumanEval/3", "HumanEval/4"]


@pytest.mark.parametrize(("skip", "match"), [(-1, ">= 0"), (164, "leaves no prompt")])
def test_a_skip_below_zero_or_past_the_end_is_refused(skip: int, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_prompts("humaneval", skip=skip)


def test_limit_below_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        load_prompts("humaneval", limit=0)


def test_sharegpt_heldout_prompts_are_the_system_and_first_user_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    heldout = [
        Conversation("a", (Turn("user", "q1"), Turn("assistant", "r1"), Turn("user", "q2"))),
        Conversation("b", (Turn("system", "s"), Turn("user", "q"), Turn("assistant", "r"))),
    ]
    monkeypatch.setattr(prompts, "load_sharegpt", lambda split: heldout if split == "heldout" else [])

    assert load_prompts("sharegpt-heldout") == [
        BenchPrompt("a", (Turn("user", "q1"),)),
        BenchPrompt("b", (Turn("system", "s"), Turn("user", "q"))),
    ]


def test_jsonl_rows_of_every_shape_become_prompts(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "mixed.jsonl",
        json.dumps({"question_id": 81, "turns": ["first", "second"]}),
        "",
        json.dumps({"prompt": "plain"}),
        json.dumps(
            {
                "id": "sg",
                "conversations": [
                    {"from": "gpt", "value": "leading answer"},
                    {"from": "system", "value": "sys"},
                    {"from": "human", "value": "ask"},
                    {"from": "gpt", "value": "answer"},
                    {"from": "human", "value": "later"},
                ],
            }
        ),
    )

    assert load_prompts(str(path)) == [
        BenchPrompt("81", (Turn("user", "first"),)),
        BenchPrompt("3", (Turn("user", "plain"),)),
        BenchPrompt("sg", (Turn("system", "sys"), Turn("user", "ask"))),
    ]


def test_unknown_dataset_name_lists_the_valid_ones() -> None:
    with pytest.raises(DatasetError, match="humaneval, sharegpt-heldout or a path to a .jsonl file"):
        load_prompts("mt-bench")


def test_missing_prompt_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "absent.jsonl"

    with pytest.raises(DatasetError, match=f"{missing} does not exist"):
        load_prompts(str(missing))


def test_empty_file_says_what_each_line_must_hold(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "empty.jsonl", "", "   ")

    with pytest.raises(DatasetError, match='has no prompts; each line must be a JSON object with "turns"'):
        load_prompts(str(path))


def test_malformed_json_names_the_file_and_line(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "bad.jsonl", json.dumps({"prompt": "ok"}), '{"prompt": "unclosed')

    with pytest.raises(DatasetError, match=r"bad.jsonl line 2: not valid JSON \("):
        load_prompts(str(path))


def test_row_without_a_known_key_names_the_line_and_the_accepted_keys(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "odd.jsonl", json.dumps({"question": "what?"}))

    with pytest.raises(DatasetError, match="odd.jsonl line 1: expected .* turns, prompt, conversations"):
        load_prompts(str(path))


def test_row_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "list.jsonl", json.dumps(["a prompt"]))

    with pytest.raises(DatasetError, match="line 1: expected a JSON object"):
        load_prompts(str(path))


@pytest.mark.parametrize(
    "row",
    [{"turns": []}, {"prompt": "  "}, {"conversations": [{"from": "gpt", "value": "no question"}]}],
)
def test_row_without_a_user_message_is_refused(tmp_path: Path, row: dict) -> None:
    path = write_lines(tmp_path / "blank.jsonl", json.dumps(row))

    with pytest.raises(DatasetError, match="line 1: no user message"):
        load_prompts(str(path))


@pytest.mark.integration
def test_real_sharegpt_heldout_gives_one_prompt_per_heldout_conversation() -> None:
    loaded = load_prompts("sharegpt-heldout")

    assert len(loaded) == HELDOUT_SIZE
    assert all(prompt.messages[-1].role == "user" for prompt in loaded)
    assert len({prompt.id for prompt in loaded}) == HELDOUT_SIZE
