"""A character-level tokenizer with a ChatML template, small enough for the tiny targets' 64 tokens.

``<|im_start|>`` and ``<|im_end|>`` are single tokens (ids 0 and 1; ``<|im_end|>`` is the
end-of-turn and EOS token, as in SmolLM2's template); every other character is one token. The
template renders each message as ``<|im_start|>ROLE\\nCONTENT<|im_end|>\\n``.
"""

from __future__ import annotations

from collections.abc import Sequence

IM_START, IM_END = "<|im_start|>", "<|im_end|>"
CHARACTERS = "\n abcdefghijklmnopqrstuvwxyz0123456789.,!?'-:"
TOKENS = (IM_START, IM_END, *CHARACTERS)  # 47 tokens: fits a 64-token tiny target


class ChatTokenizer:
    chat_template = "chatml"  # truthy: drafts.target.chat uses apply_chat_template
    eos_token_id = 1

    def get_vocab(self) -> dict[str, int]:
        return {token: i for i, token in enumerate(TOKENS)}

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        vocab, ids, i = self.get_vocab(), [], 0
        while i < len(text):
            special = next((s for s in (IM_START, IM_END) if text.startswith(s, i)), None)
            piece = special or text[i]
            if piece not in vocab:
                raise ValueError(f"{piece!r} is not in the test vocabulary {CHARACTERS!r}")
            ids.append(vocab[piece])
            i += len(piece)
        return ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return "".join(TOKENS[i] for i in ids if not (skip_special_tokens and i < 2))

    def apply_chat_template(
        self, messages: list[dict[str, str]], add_generation_prompt: bool = False, tokenize: bool = True
    ) -> str | list[int]:
        text = "".join(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n" for m in messages)
        if add_generation_prompt:
            text += f"{IM_START}assistant\n"
        return text if not tokenize else self.encode(text)
