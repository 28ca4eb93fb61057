from __future__ import annotations

from dataclasses import dataclass

from drafts.target.chat import as_message, format_chat, stop_token_ids
from tests.tiny_targets import FakeTokenizer


@dataclass
class Message:
    role: str
    content: str


class TemplatedTokenizer(FakeTokenizer):
    """A tokenizer with a chat template: ``[role]content`` per message, then ``[assistant]``."""

    chat_template = "fake"

    def apply_chat_template(
        self, messages: list[dict[str, str]], add_generation_prompt: bool, tokenize: bool
    ) -> str:
        assert add_generation_prompt and not tokenize
        return "".join(f"[{m['role']}]{m['content']}" for m in messages) + "[assistant]"

    def get_vocab(self) -> dict[str, int]:
        return {**super().get_vocab(), "<|im_end|>": 70}


def test_turns_may_be_dicts_or_objects_with_role_and_content() -> None:
    assert as_message({"role": "user", "content": "hi", "extra": 1}) == {"role": "user", "content": "hi"}
    assert as_message(Message("assistant", "yo")) == {"role": "assistant", "content": "yo"}


def test_a_tokenizer_with_a_chat_template_formats_with_it() -> None:
    tokenizer = TemplatedTokenizer()

    tokens = format_chat(tokenizer, [Message("user", "hi")])

    assert tokens == tokenizer.encode("[user]hi[assistant]")


def test_without_a_template_the_prompt_is_a_plain_transcript_ending_with_the_assistant() -> None:
    tokenizer = FakeTokenizer()

    tokens = format_chat(
        tokenizer, [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    )

    assert tokens == tokenizer.encode("System: be brief\n\nUser: hi\n\nAssistant:")


def test_stop_ids_gather_eos_generation_eos_and_the_end_of_turn_marker() -> None:
    assert stop_token_ids(TemplatedTokenizer(eos_token_id=2), [5, 6]) == {2, 5, 6, 70}
    assert stop_token_ids(FakeTokenizer(eos_token_id=2), 2) == {2}
    assert stop_token_ids(FakeTokenizer(), None) == frozenset()
