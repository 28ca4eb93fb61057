"""A few tiny chats in the test tokenizer's alphabet (lowercase letters, digits, ``.,!?'-:``)."""

from __future__ import annotations

from drafts.data.conversations import Conversation, Turn

CHATS = [
    ("what is two plus two?", "two plus two is four."),
    ("name a colour.", "blue, like the sky!"),
    ("say hi", "hi there. how can i help?"),
    ("count to five", "1, 2, 3, 4, 5."),
]


def conversations() -> list[Conversation]:
    return [
        Conversation(str(i), (Turn("user", question), Turn("assistant", answer)))
        for i, (question, answer) in enumerate(CHATS)
    ]
