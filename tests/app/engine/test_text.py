"""The incremental detokenizer: UTF-8-safe pieces with offsets, cuts, and stop strings."""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.text import Detokenizer

TEXT = "héllo → wörld, 日本語 ok"
TOKENS = list(TEXT.encode("utf-8"))  # one token per byte: every multi-byte character is split


def byte_decode(ids: Sequence[int]) -> str:
    return bytes(ids).decode("utf-8", errors="replace")


WORDS = ["▁Hello", "▁there", ",", "▁friend", "!"]


def sentencepiece_decode(ids: Sequence[int]) -> str:
    """As Llama's tokenizer: '▁' is a space, and the decoded text's leading space is dropped."""
    return "".join(WORDS[i] for i in ids).replace("▁", " ").lstrip(" ")


def test_pieces_rebuild_the_full_decode_and_hold_incomplete_characters_back() -> None:
    text = Detokenizer(byte_decode)
    pieces = text.extend(TOKENS)
    assert "".join(p.text for p in pieces) == TEXT == text.text
    assert all("\ufffd" not in p.text for p in pieces)
    assert any(p.text == "" for p in pieces)  # the first bytes of each multi-byte character
    for piece in pieces:
        assert text.text[piece.char_start : piece.char_start + len(piece.text)] == piece.text


def test_a_tokenizer_that_drops_the_leading_space_keeps_the_spaces_between_words() -> None:
    text = Detokenizer(sentencepiece_decode)
    pieces = text.extend(range(len(WORDS)))
    assert [p.text for p in pieces] == ["Hello", " there", ",", " friend", "!"]
    assert text.text == sentencepiece_decode(range(len(WORDS)))


def test_a_cut_forgets_the_text_from_that_token_on_and_later_tokens_continue_it() -> None:
    text = Detokenizer(byte_decode)
    text.extend(TOKENS)
    middle = TEXT.index("日") + 1  # a cut inside a character: the character's first byte stays held
    cut_at = len(TEXT[:middle].encode("utf-8")) - 2
    text.cut(cut_at)
    assert text.tokens == TOKENS[:cut_at]
    assert text.text == TEXT[: middle - 1]
    assert text.char_of(cut_at) == len(text.text)
    rest = text.extend(TOKENS[cut_at:])
    assert text.text == TEXT and "".join(p.text for p in rest) == TEXT[middle - 1 :]


def test_a_stop_string_is_found_when_the_token_completing_it_arrives_even_across_tokens() -> None:
    text = Detokenizer(byte_decode, stop_strings=("wörld",))
    completed = None
    for i, token in enumerate(TOKENS):
        text.append(token)
        if text.stop_at is not None and completed is None:
            completed = i + 1
    end = TEXT.index("wörld") + len("wörld")
    assert completed == text.stop_at == len(TEXT[:end].encode("utf-8"))


def test_cutting_before_a_stop_string_clears_it() -> None:
    text = Detokenizer(byte_decode, stop_strings=("ok",))
    text.extend(TOKENS)
    assert text.stop_at == len(TOKENS)
    text.cut(3)
    assert text.stop_at is None and text.text == TEXT[:2]
