"""Conversations to training sequences: the loss falls on the assistant's tokens only."""

from __future__ import annotations

import torch

from drafts.data.conversations import Conversation, Turn
from drafts.training.tokenize import Sequence, tokenize_all, tokenize_conversation
from tests.chat_tokenizer import IM_END, IM_START, ChatTokenizer

TOKENIZER = ChatTokenizer()
TWO_TURNS = Conversation(
    "two",
    (
        Turn("system", "be brief."),
        Turn("user", "hi"),
        Turn("assistant", "hello!"),
        Turn("user", "what is 2 plus 2?"),
        Turn("assistant", "4."),
    ),
)


def text(ids: torch.Tensor) -> str:
    return TOKENIZER.decode(ids.tolist())


def masked_runs(seq: Sequence) -> list[str]:
    """The text of each maximal run of loss-masked tokens."""
    runs: list[str] = []
    previous = False
    for token, masked in zip(seq.ids.tolist(), seq.loss_mask.tolist(), strict=True):
        if masked and not previous:
            runs.append("")
        if masked:
            runs[-1] += TOKENIZER.decode([token])
        previous = masked
    return runs


def test_exactly_the_assistant_tokens_and_their_end_of_turn_marker_carry_the_loss() -> None:
    seq = tokenize_conversation(TOKENIZER, TWO_TURNS, max_len=512)

    assert seq is not None
    # ChatML's turn ends with <|im_end|> and a newline: both are the assistant's to predict.
    assert masked_runs(seq) == [f"hello!{IM_END}\n", f"4.{IM_END}\n"]
    whole = TOKENIZER.apply_chat_template([{"role": t.role, "content": t.content} for t in TWO_TURNS.turns])
    assert seq.ids.tolist() == whole  # the ids are the whole rendered conversation
    for run in masked_runs(seq):
        before = text(seq.ids).split(run)[0]
        assert before.endswith(f"{IM_START}assistant\n")  # the generation prompt is not scored


def test_truncation_keeps_the_first_tokens_and_their_mask() -> None:
    full = tokenize_conversation(TOKENIZER, TWO_TURNS, max_len=512)
    assert full is not None
    cut = len(full.ids) - 20

    seq = tokenize_conversation(TOKENIZER, TWO_TURNS, max_len=cut)

    assert seq is not None
    assert torch.equal(seq.ids, full.ids[:cut])
    assert torch.equal(seq.loss_mask, full.loss_mask[:cut])


def test_a_conversation_cut_before_any_assistant_token_gives_nothing() -> None:
    prompt_length = len(TOKENIZER.encode(f"{IM_START}system\nbe brief.{IM_END}\n{IM_START}user\nhi{IM_END}\n"))

    assert tokenize_conversation(TOKENIZER, TWO_TURNS, max_len=prompt_length) is None


def test_conversations_without_an_answer_are_skipped() -> None:
    unanswered = Conversation("q", (Turn("user", "anyone?"),))

    sequences = list(tokenize_all(TOKENIZER, [unanswered, TWO_TURNS], max_len=512))

    assert len(sequences) == 1
    assert sequences[0].loss_mask.any()
