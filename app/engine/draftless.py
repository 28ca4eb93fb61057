"""A client with no draft: the server decodes alone and streams ("API streaming").

The baseline every speculative method is measured against over the same link, and the mode for
a device too weak to run a draft. The client still knows its target (the fingerprint the server
checks, the end-of-turn tokens, the tokenizer for stop strings), but asks for no activations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from drafts.protocol import Needs
from drafts.target.loading import TargetFingerprint
from drafts.target.runner import TargetRunner

DRAFTLESS_ID = "none"  # Hello.draft_id of a client that drafts nothing


@dataclass(frozen=True)
class Draftless:
    target: TargetFingerprint  # Hello.target
    stop_ids: frozenset[int]  # the target's end-of-turn tokens
    decode: Callable[[Sequence[int]], str]  # token ids -> text (stop strings)
    draft_id: str = DRAFTLESS_ID
    wants_memory: bool = False
    tokenizer: Any = None  # the target's tokenizer: renders a chat (drafts.target.chat.format_chat)

    @classmethod
    def of(cls, runner: TargetRunner) -> Draftless:
        return cls(runner.fingerprint, runner.stop_ids, runner.decode, tokenizer=runner.tokenizer)

    def needs(self, compressed: bool) -> Needs:
        return Needs()  # nothing: the tokens are all it reads
