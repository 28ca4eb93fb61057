"""One local answer, on the engine's worker thread: the core's rounds turned into engine events.

    cut the target's cache and the draft back to the common prefix     (local_conversation)
    for each round of drafts.decoding's speculative loop (plain decoding when there is no draft):
        DRAFT_ACCEPTED tokens, DraftRejected (the draft's refused continuation), the target's own
        token as TARGET: each TokenGenerated with its text (app.engine.text, UTF-8 safe)
        StatsUpdated about twice a second
        cancelled? stop here, between rounds
    StatsUpdated, Finished

Stop tokens, stop strings and the token limit are the core's (:mod:`drafts.decoding.stopping`):
a round's ``output`` is already cut where the answer ends, so the events show exactly ``ar``'s
tokens at T = 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from app.engine.events import DraftRejected, EngineEvent, Finished, TokenGenerated
from app.engine.local_conversation import CachedConversation
from app.engine.local_stats import LocalStats
from app.engine.text import Detokenizer
from drafts.decoding.autoregressive import autoregressive_rounds
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import RoundEvent, TokenSource
from drafts.decoding.generation import Generation
from drafts.decoding.speculative import speculative_rounds
from drafts.decoding.stopping import StopReason
from drafts.drafters.base import Drafter
from drafts.target.runner import TargetRunner


class LocalGeneration:
    """Generates one answer and emits its events (``emit`` must be safe to call from this thread)."""

    def __init__(
        self,
        runner: TargetRunner,
        drafter: Drafter | None,
        conversation: CachedConversation,
        emit: Callable[[EngineEvent], None],
        cancelled: threading.Event,
        stats_interval_s: float = 0.5,
    ) -> None:
        self.runner = runner
        self.drafter = drafter
        self.conversation = conversation
        self.emit = emit
        self.cancelled = cancelled
        self.stats_interval_s = stats_interval_s
        self.text = Detokenizer(runner.decode)
        self.stats = LocalStats()
        self._stats_at = self.stats.start

    def run(self, prompt: list[int], decode: DecodeConfig) -> Finished:
        """Generate after ``prompt`` (the rendered conversation); emits every event, Finished last."""
        gen = Generation(prompt_len=len(prompt))
        self.stats.shape = decode.shape.describe() if self.drafter is not None else ""
        ran = list(prompt)  # what the target has been given: the prompt, then every round's tokens
        rounds = self._rounds(prompt, decode, gen)
        try:
            for event in rounds:
                ran += event.tokens
                self._show(event)
                self._report()
                if self.cancelled.is_set() and gen.stop is None:
                    gen.stop = StopReason.CANCELLED
                    break
        except BaseException:
            self.conversation.forget(self.runner)  # a round may have stopped halfway
            raise
        self.conversation.record(ran)
        self.emit(self.stats.updated())
        finished = Finished(tuple(gen.tokens), gen.stop, self.stats.finished(), self.text.text)
        self.emit(finished)
        return finished

    def _rounds(self, prompt: list[int], decode: DecodeConfig, gen: Generation) -> Iterator[RoundEvent]:
        session = self.conversation.cut_back(prompt, self.drafter)
        self.stats.prefill_tokens = len(prompt) - session.length
        if self.drafter is None:
            return autoregressive_rounds(self.runner, prompt, decode, gen, session)
        return speculative_rounds(self.runner, self.drafter, prompt, decode, gen, session)

    def _show(self, event: RoundEvent) -> None:
        """The round's output as token events: accepted drafts, the refused rest, the target's token."""
        self.stats.add_round(event)
        position = len(self.text.tokens)
        for i, token in enumerate(event.output):
            if i == len(event.accepted) and event.rejected:
                self.emit(DraftRejected(position + i, event.rejected))
            source = TokenSource.DRAFT_ACCEPTED if i < len(event.accepted) else TokenSource.TARGET
            piece = self.text.append(token)
            self.stats.add_token(source)
            self.emit(TokenGenerated(position + i, token, source, piece.text, piece.char_start))

    def _report(self) -> None:
        now = time.perf_counter()
        if now - self._stats_at >= self.stats_interval_s:
            self._stats_at = now
            self.emit(self.stats.updated())
