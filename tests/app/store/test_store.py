"""ConversationStore on real SQLite files in temporary directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.store import ConversationStore, StoreError
from app.store.store import FILE_NAME, UnknownConversationError, default_path
from drafts.decoding.events import TokenSource


@pytest.fixture
def store(tmp_path: Path) -> ConversationStore:
    with ConversationStore.open(tmp_path / "chats.sqlite3") as opened:
        yield opened


def test_the_default_path_follows_moa_chat_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOA_CHAT_DATA", str(tmp_path / "data"))
    assert default_path() == tmp_path / "data" / FILE_NAME
    with ConversationStore.open() as store:
        store.create()
    assert (tmp_path / "data" / FILE_NAME).is_file()


def test_the_file_is_in_wal_mode(store: ConversationStore) -> None:
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_messages_come_back_in_order_with_their_provenance(store: ConversationStore) -> None:
    chat = store.create(system="Be brief.")
    store.add_message(chat.id, "user", "What is 2+2?")
    runs = [("The answer", TokenSource.DRAFT_ACCEPTED), (" is", TokenSource.TARGET), (" 4.", "repaired")]
    answer = store.add_message(chat.id, "assistant", "The answer is 4.", runs, complete=True)

    loaded = store.load(chat.id)
    assert loaded.system == "Be brief."
    assert [m.role for m in loaded.messages] == ["user", "assistant"]
    assert loaded.messages[1].id == answer.id
    assert loaded.messages[1].provenance == [("The answer", "accepted"), (" is", "target"), (" 4.", "repaired")]
    assert "".join(text for text, _ in loaded.messages[1].provenance) == loaded.messages[1].content
    assert loaded.messages[0].provenance == []


def test_a_streaming_answer_is_updated_until_it_is_complete(store: ConversationStore) -> None:
    chat = store.create()
    answer = store.add_message(chat.id, "assistant", "", complete=False)
    store.update_message(answer.id, "Hel", [("Hel", "offline")], complete=False)
    assert store.load(chat.id).messages[0].complete is False
    store.update_message(answer.id, "Hello", [("Hello", "accepted")], complete=True, stats={"tau": 2.5})

    message = store.load(chat.id).messages[0]
    assert (message.content, message.complete, message.stats) == ("Hello", True, {"tau": 2.5})
    assert message.provenance == [("Hello", "accepted")]


def test_the_first_user_message_names_a_new_chat(store: ConversationStore) -> None:
    chat = store.create()
    store.add_message(chat.id, "user", "  Explain WAL mode\nin detail please")
    store.add_message(chat.id, "user", "and something else")
    assert store.load(chat.id).title == "Explain WAL mode"
    named = store.create(title="Mine")
    store.add_message(named.id, "user", "hello")
    assert store.load(named.id).title == "Mine"


def test_list_puts_the_latest_change_first_and_searches_titles_and_text(store: ConversationStore) -> None:
    first = store.create(title="Rust lifetimes")
    second = store.create(title="Cooking")
    store.add_message(second.id, "assistant", "Add the Saffron last.")
    store.add_message(first.id, "user", "borrow checker?")  # first changes last: it comes first

    assert [s.id for s in store.list()] == [first.id, second.id]
    assert [s.messages for s in store.list()] == [1, 1]
    assert [s.id for s in store.list("saffron")] == [second.id]
    assert [s.id for s in store.list("LIFETIMES")] == [first.id]
    assert [s.id for s in store.list("100%")] == []  # LIKE wildcards are plain text here


def test_rename_and_delete(store: ConversationStore) -> None:
    chat = store.create()
    store.add_message(chat.id, "user", "hi")
    store.rename(chat.id, "Greetings")
    assert store.load(chat.id).title == "Greetings"
    store.delete(chat.id)
    assert store.list() == []
    assert store._conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    with pytest.raises(UnknownConversationError, match="no conversation"):
        store.load(chat.id)
    with pytest.raises(StoreError):
        store.rename(chat.id, "x")


def test_truncate_after_keeps_the_message_and_drops_what_follows(store: ConversationStore) -> None:
    chat = store.create()
    other = store.create()
    ids = [store.add_message(chat.id, role, text).id for role, text in [("user", "a"), ("assistant", "b")] * 2]
    kept_elsewhere = store.add_message(other.id, "user", "untouched")

    assert store.truncate_after(chat.id, ids[2]) == 1
    assert [m.id for m in store.load(chat.id).messages] == ids[:3]
    assert [m.id for m in store.load(other.id).messages] == [kept_elsewhere.id]


def test_exports_hold_every_message(store: ConversationStore) -> None:
    chat = store.create(title="Sums", system="Answer in digits.")
    store.add_message(chat.id, "user", "2+2?")
    store.add_message(chat.id, "assistant", "4", [("4", "target")], complete=False)

    markdown = store.export_markdown(chat.id)
    assert markdown.startswith("# Sums\n")
    assert "> Answer in digits." in markdown
    assert "## You\n\n2+2?" in markdown and "## Assistant\n\n4" in markdown
    assert "cut off" in markdown

    data = store.export_json(chat.id)
    assert data["title"] == "Sums" and data["system"] == "Answer in digits."
    assert [(m["role"], m["content"], m["complete"]) for m in data["messages"]] == [
        ("user", "2+2?", True),
        ("assistant", "4", False),
    ]
    assert data["messages"][1]["provenance"] == [{"text": "4", "source": "target"}]


def test_a_second_connection_reads_what_the_first_wrote(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    with ConversationStore.open(path) as writer, ConversationStore.open(path) as reader:
        chat = writer.create(title="shared")
        writer.add_message(chat.id, "user", "visible?")
        assert reader.load(chat.id).messages[0].content == "visible?"
