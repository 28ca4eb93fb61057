"""When a generation ends: a stop token, a stop string, max tokens or the context window."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum


class StopReason(Enum):
    EOS = "eos"
    STOP_STRING = "stop_string"
    MAX_TOKENS = "max_tokens"
    CONTEXT = "context"
    CANCELLED = "cancelled"  # the user stopped it (the engine's cancel); the partial output is kept


@dataclass(frozen=True)
class StopCondition:
    max_new_tokens: int
    stop_ids: frozenset[int] = frozenset()
    stop_strings: tuple[str, ...] = ()

    def check(
        self, generated: Sequence[int], decode: Callable[[Sequence[int]], str], new_from: int = 0
    ) -> tuple[int, StopReason] | None:
        """(tokens to keep, why) if ``generated`` must end, else None. Stop tokens are not kept.

        Only tokens from ``new_from`` on are new; earlier ones were checked before. When several
        are new at once (a speculative round), the earliest stop wins, as if they had come one at
        a time.
        """
        stops: list[tuple[int, int, StopReason]] = []  # (tokens kept, rank on a tie, why)
        eos = next((i for i in range(new_from, len(generated)) if generated[i] in self.stop_ids), None)
        if eos is not None:
            stops.append((eos, 2, StopReason.EOS))
        if len(generated) >= self.max_new_tokens:
            stops.append((self.max_new_tokens, 1, StopReason.MAX_TOKENS))
        if self.stop_strings:
            found = self._stop_string_cut(generated, decode)
            if found is not None:
                stops.append((found, 0, StopReason.STOP_STRING))
        if not stops:
            return None
        # On a tie, one token at a time meets a stop string completed by the last kept token
        # first, then the limit reached with it, and only then a stop token after it.
        kept, _, reason = min(stops)
        return kept, reason

    def _stop_string_cut(self, generated: Sequence[int], decode: Callable[[Sequence[int]], str]) -> int | None:
        """Shortest prefix of ``generated`` whose text contains a stop string."""
        if not any(s in decode(generated) for s in self.stop_strings):
            return None
        for n in range(1, len(generated) + 1):
            text = decode(generated[:n])
            if any(s in text for s in self.stop_strings):
                return n
        return None
