from __future__ import annotations

from dataclasses import dataclass

from drafts.target.chat import as_message, format_chat, format_chat_after, render_chat, stop_token_ids
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


class MergingTokenizer(TemplatedTokenizer):
    """Encodes "!!" as one token (99) when generated, but text encodes each "!" alone: like SmolLM2's "\\n\\n"."""


def test_a_later_turn_keeps_the_generated_tokens_of_the_answer_before_it() -> None:
    tokenizer = TemplatedTokenizer()
    first = render_chat(tokenizer, [Message("user", "hi")])
    answer_tokens, answer_text = [99], "yo"  # as generated: not what encoding "yo" gives
    said = first.answered(answer_tokens, answer_text)

    second = format_chat_after(
        tokenizer, [Message("user", "hi"), Message("assistant", "yo"), Message("user", "and?")], said
    )

    assert second.tokens[: len(said.tokens)] == said.tokens
    assert second.tokens[len(said.tokens) :] == tuple(tokenizer.encode("[user]and?[assistant]"))
    assert second.text == "[user]hi[assistant]yo[user]and?[assistant]"


def test_an_edited_answer_is_encoded_afresh() -> None:
    tokenizer = TemplatedTokenizer()
    said = render_chat(tokenizer, [Message("user", "hi")]).answered([99], "yo")
    turns = [Message("user", "hi"), Message("assistant", "hey"), Message("user", "and?")]

    assert format_chat_after(tokenizer, turns, said) == render_chat(tokenizer, turns)
    assert format_chat_after(tokenizer, turns, None) == render_chat(tokenizer, turns)
