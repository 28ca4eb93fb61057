from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from drafts.data import sharegpt
from drafts.data.conversations import Turn
from drafts.data.sharegpt import (
    HELDOUT_SIZE,
    clean_turns,
    iter_json_array,
    iter_sharegpt,
    load_sharegpt,
)
from drafts.errors import DatasetError


def conversation(index: int, *speakers: str) -> dict:
    speakers = speakers or ("human", "gpt")
    return {
        "id": f"c{index}",
        "conversations": [
            {"from": who, "value": f"{who} says {index}.{n} é"} for n, who in enumerate(speakers)
        ],
    }


def write_array(path: Path, elements: list[dict], cut_chars: int = 0) -> Path:
    text = json.dumps(elements, indent=2, ensure_ascii=False)
    path.write_text(text[: len(text) - cut_chars], encoding="utf-8")
    return path


def test_complete_array_yields_every_element(tmp_path: Path) -> None:
    elements = [conversation(i) for i in range(5)]
    path = write_array(tmp_path / "full.json", elements)

    assert list(iter_json_array(path)) == elements


def test_truncated_file_yields_the_complete_conversations_only(tmp_path: Path) -> None:
    elements = [conversation(i) for i in range(5)]
    path = write_array(tmp_path / "torn.json", elements, cut_chars=30)  # cuts into the last element

    assert list(iter_json_array(path, chunk_chars=7)) == elements[:4]
    assert [conv.id for conv in iter_sharegpt(path)] == ["c0", "c1", "c2", "c3"]


def test_file_cut_between_elements_yields_all_elements_before_the_cut(tmp_path: Path) -> None:
    elements = [conversation(i) for i in range(3)]
    text = json.dumps(elements, indent=2)
    cut = text.rindex("}") + 1  # the closing "]" is lost, the last element is whole
    path = tmp_path / "cut.json"
    path.write_text(text[:cut] + ",\n  ", encoding="utf-8")

    assert list(iter_json_array(path, chunk_chars=5)) == elements


@pytest.mark.parametrize("chunk_chars", [1, 3, 64, 1 << 20])
def test_chunk_size_does_not_change_what_is_decoded(tmp_path: Path, chunk_chars: int) -> None:
    elements = [conversation(i, "human", "gpt", "human", "gpt") for i in range(20)]
    path = write_array(tmp_path / "torn.json", elements, cut_chars=11)

    assert list(iter_json_array(path, chunk_chars=chunk_chars)) == elements[:19]


def test_file_that_is_not_a_json_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "object.json"
    path.write_text('  \n {"id": "c0"}', encoding="utf-8")

    with pytest.raises(DatasetError, match="does not start with a JSON array"):
        list(iter_json_array(path, chunk_chars=1))


def test_speakers_map_to_roles_and_unknown_speakers_are_dropped() -> None:
    raw = [
        {"from": "system", "value": "be brief"},
        {"from": "human", "value": "hi"},
        {"from": "bard", "value": "dropped"},
        {"from": "chatgpt", "value": "hello"},
        {"from": "user", "value": "and?"},
        {"from": "bing", "value": "yes"},
        {"from": "assistant", "value": "more"},
    ]

    assert clean_turns(raw) == (
        Turn("system", "be brief"),
        Turn("user", "hi"),
        Turn("assistant", "hello"),
        Turn("user", "and?"),
        Turn("assistant", "yes"),
        Turn("assistant", "more"),
    )


def test_blank_turns_and_leading_assistant_turns_are_dropped() -> None:
    raw = [
        {"from": "gpt", "value": "I start"},
        {"from": "human", "value": "   "},
        {"from": "human", "value": "question"},
        {"from": "gpt", "value": ""},
        {"from": "gpt", "value": 42},
        {"from": "gpt", "value": "answer"},
    ]

    assert clean_turns(raw) == (Turn("user", "question"), Turn("assistant", "answer"))


def test_conversations_without_an_answered_user_turn_are_dropped(tmp_path: Path) -> None:
    elements = [
        conversation(0, "human", "gpt"),
        conversation(1, "gpt", "human"),
        conversation(2, "human"),
        conversation(3, "system", "human", "bard"),
        {"id": "c4", "conversations": "not a list"},
        ["not", "a", "dict"],
        conversation(5, "system", "human", "gpt"),
    ]
    path = write_array(tmp_path / "mixed.json", elements)

    assert [conv.id for conv in iter_sharegpt(path)] == ["c0", "c5"]


def test_heldout_is_the_last_conversations_and_train_all_the_others(tmp_path: Path) -> None:
    total = HELDOUT_SIZE + 7
    elements = [conversation(i) for i in range(total)] + [conversation(total, "gpt")]
    path = write_array(tmp_path / "data.json", elements, cut_chars=5)

    train = load_sharegpt("train", path)
    heldout = load_sharegpt("heldout", path)

    assert [conv.id for conv in train] == [f"c{i}" for i in range(7)]
    assert [conv.id for conv in heldout] == [f"c{i}" for i in range(7, total)]


def test_second_load_reads_the_cache_instead_of_decoding_the_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_array(tmp_path / "data.json", [conversation(i) for i in range(HELDOUT_SIZE + 3)])
    first = load_sharegpt("train", path)

    def refuse(_path: Path) -> None:
        raise AssertionError("the source was decoded again")

    monkeypatch.setattr(sharegpt, "_memo", {})
    monkeypatch.setattr(sharegpt, "iter_sharegpt", refuse)

    assert load_sharegpt("train", path) == first


def test_changed_source_file_is_decoded_again(tmp_path: Path) -> None:
    path = write_array(tmp_path / "data.json", [conversation(i) for i in range(HELDOUT_SIZE + 3)])
    assert len(load_sharegpt("train", path)) == 3

    write_array(path, [conversation(i) for i in range(HELDOUT_SIZE + 5)])
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))

    assert len(load_sharegpt("train", path)) == 5


def test_missing_file_raises_a_dataset_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="nowhere.json"):
        load_sharegpt("train", tmp_path / "nowhere.json")


def test_file_with_no_more_than_the_heldout_conversations_is_refused(tmp_path: Path) -> None:
    path = write_array(tmp_path / "small.json", [conversation(i) for i in range(HELDOUT_SIZE)])

    with pytest.raises(DatasetError, match="larger ShareGPT file"):
        load_sharegpt("train", path)


def test_unknown_split_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="'train' or 'heldout'"):
        load_sharegpt("test", tmp_path / "unused.json")  # type: ignore[arg-type]


@pytest.mark.integration
def test_real_sharegpt_file_has_17671_complete_conversations_and_disjoint_splits() -> None:
    assert sum(1 for _ in iter_json_array(sharegpt.sharegpt_json())) == 17_671

    train = load_sharegpt("train")
    heldout = load_sharegpt("heldout")

    assert len(heldout) == HELDOUT_SIZE
    assert len(train) == 17_189  # 17,389 survive cleaning
    assert not {conv.id for conv in train} & {conv.id for conv in heldout}
    assert all(conv.turns[-1].role in ("user", "assistant") for conv in heldout)
