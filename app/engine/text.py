"""Tokens to text as they come: an incremental, UTF-8-safe detokenizer with character offsets.

    text = Detokenizer(runner.decode, stop_strings=("###",))
    piece = text.append(token)       # Piece(text, char_start): this token's new text ("" while a
                                     # character is incomplete: its bytes arrive with a later token)
    text.stop_at                     # tokens to keep when a stop string has appeared, else None
    text.cut(position)               # back to the first ``position`` tokens (a repair), text included
    text.char_of(position)           # where token ``position``'s text starts (``len(text.text)`` at the end)
    text.text, text.tokens

Why incremental: decoding the whole output after every token costs O(n) per token (O(n^2) per
answer), and a byte-level BPE splits one character over several tokens, so decoding a token on
its own gives U+FFFD halves. As in TGI / vLLM, each step decodes only a short window: the tokens
of the last emitted piece (context, so that a tokenizer which drops a leading space sees the
same surroundings) and the unread ones after them, and emits what that adds to the context's
own text, unless it ends with an incomplete character (U+FFFD): then the token's text is held
back until a later token completes it.

Stop strings are searched only in the tail that could contain a new match (the new text plus
``len(longest stop) - 1`` characters before it). The answer keeps the tokens up to the one that
completes the stop string, as :class:`drafts.decoding.stopping.StopCondition` does for ``ar``.

``decode`` is any ``token ids -> str`` (``TargetRunner.decode``: special tokens skipped). The
object is not thread-safe; each generation owns one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

REPLACEMENT = "\ufffd"  # what a tokenizer's decode gives for an incomplete UTF-8 sequence


@dataclass(frozen=True)
class Piece:
    """The text one token added, and where it starts in the answer's text."""

    text: str
    char_start: int


@dataclass
class Detokenizer:
    """See the module docstring."""

    decode: Callable[[Sequence[int]], str]
    stop_strings: tuple[str, ...] = ()
    tokens: list[int] = field(default_factory=list)
    text: str = ""
    stop_at: int | None = None  # tokens to keep: the first stop string ends with token stop_at - 1
    _prefix: int = 0  # the window starts here (context tokens whose text was emitted already)
    _read: int = 0  # tokens before this one have their text emitted
    _starts: list[int] = field(default_factory=list)  # char offset of each token's text
    _offsets: list[tuple[int, int]] = field(default_factory=list)  # (_prefix, _read) before each token

    def append(self, token: int) -> Piece:
        """Add ``token``; returns the text it adds (possibly "") and where that text starts."""
        self._offsets.append((self._prefix, self._read))
        self._starts.append(len(self.text))
        self.tokens.append(token)
        piece = self._read_new()
        start = len(self.text)
        self.text += piece
        if piece and self.stop_at is None and self._stop_in_tail(start, piece):
            self.stop_at = len(self.tokens)
        return Piece(piece, start)

    def extend(self, tokens: Sequence[int]) -> list[Piece]:
        return [self.append(token) for token in tokens]

    def cut(self, position: int) -> None:
        """Forget the tokens from ``position`` on, and their text (held bytes of earlier tokens return)."""
        if position >= len(self.tokens):
            return
        self._prefix, self._read = self._offsets[position]
        self.text = self.text[: self._starts[position]]
        del self.tokens[position:], self._starts[position:], self._offsets[position:]
        if self.stop_at is not None and self.stop_at > position:
            self.stop_at = None  # the text before ``position`` held no stop string (it would have ended there)

    def char_of(self, position: int) -> int:
        """Offset in ``text`` where token ``position``'s text starts (its end for ``len(tokens)``)."""
        return self._starts[position] if position < len(self._starts) else len(self.text)

    # -- internals -------------------------------------------------------------------------------
    def _read_new(self) -> str:
        """The text the unread tokens add, or "" while it ends in an incomplete character."""
        seen = self.decode(self.tokens[self._prefix : self._read]) if self._read > self._prefix else ""
        full = self.decode(self.tokens[self._prefix :])
        if len(full) <= len(seen) or full.endswith(REPLACEMENT):
            return ""  # nothing yet (a skipped special token), or an incomplete character: held back
        self._prefix, self._read = self._read, len(self.tokens)
        return full[len(seen) :]

    def _stop_in_tail(self, start: int, piece: str) -> bool:
        longest = max((len(s) for s in self.stop_strings), default=0)
        if not longest:
            return False
        tail = self.text[max(0, start - longest + 1) : start + len(piece)]
        return any(s in tail for s in self.stop_strings)
