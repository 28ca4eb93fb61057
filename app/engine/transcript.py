"""One generation's output as the engine holds it: confirmed tokens, then unverified offline ones.

    prompt | confirmed (verified: accepted drafts and the target's own) | offline (unverified)

Every change to it goes through a verb here that emits the matching event
(:mod:`app.engine.events`) and applies the stop rules (:class:`~drafts.decoding.stopping.StopCondition`):
a round's tokens are confirmed, offline tokens appended, an offline span repaired. The verifier
holds every context token but the newest (the *root*, the next chain's parent).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.engine.events import DraftRejected, EngineEvent, Repaired, TokenGenerated
from drafts.decoding.config import DecodeConfig
from drafts.decoding.events import TokenSource
from drafts.decoding.stopping import StopCondition, StopReason
from drafts.errors import ConfigError


@dataclass
class Counts:
    accepted: int = 0
    target: int = 0
    offline: int = 0  # generated offline in all
    kept: int = 0  # offline tokens the verifier confirmed
    verify_rounds: int = 0
    drafted: int = 0  # tokens in the chains sent for verification
    drafted_ahead: int = 0  # chains sent as drafted ahead, during the previous verification


@dataclass
class Transcript:
    prompt: list[int]
    stop_condition: StopCondition
    decode: Callable[[Sequence[int]], str]
    emit: Callable[[EngineEvent], None]
    confirmed: list[int] = field(default_factory=list)
    offline: list[int] = field(default_factory=list)
    stop: StopReason | None = None  # the generation is over
    offline_complete: bool = False  # the offline tokens reached a stop: generate no more until verified
    counts: Counts = field(default_factory=Counts)
    started: float = field(default_factory=time.perf_counter)
    first_token_at: float | None = None
    last_token_at: float | None = None
    longest_pause_s: float = 0.0

    @classmethod
    def begin(
        cls,
        prompt: list[int],
        decode: DecodeConfig,
        stop_ids: frozenset[int],
        text: Callable[[Sequence[int]], str],
        emit: Callable[[EngineEvent], None],
    ) -> Transcript:
        """A generation's transcript: ``decode``'s stop rules, with the target's end-of-turn tokens."""
        if not prompt:
            raise ConfigError("the prompt is empty; give the model at least one token to continue")
        stop = StopCondition(decode.max_new_tokens, stop_ids, decode.stop_strings)
        return cls(list(prompt), stop, text, emit)

    @property
    def context(self) -> list[int]:
        """Prompt and confirmed output: what the verifier holds, plus the root."""
        return self.prompt + self.confirmed

    @property
    def root(self) -> int:
        return self.prompt[-1] if not self.confirmed else self.confirmed[-1]

    @property
    def history(self) -> list[int]:
        """What the verifier must hold: every context token but the root."""
        return self.context[:-1]

    @property
    def output(self) -> list[int]:
        return self.confirmed + self.offline

    # -- verbs -----------------------------------------------------------------------------------
    def confirm_round(self, accepted: list[int], rejected: list[int], next_token: int) -> None:
        """A verified chain: ``accepted`` drafts, then the target's ``next_token``; ``rejected`` struck out."""
        assert not self.offline, "repair the offline tokens before confirming new rounds"
        tokens, sources = self._stopped(accepted + [next_token])
        for token, source in zip(tokens, sources, strict=True):
            if source is TokenSource.TARGET and rejected:
                self.emit(DraftRejected(len(self.confirmed), tuple(rejected)))
            self._append(token, source)

    def add_offline(self, tokens: list[int]) -> None:
        """Unverified tokens; the last ones are dropped if they reach a stop (then offline_complete)."""
        before = len(self.output)
        verdict = self.stop_condition.check(self.output + tokens, self.decode, new_from=before)
        if verdict is not None:
            tokens = tokens[: max(verdict[0] - before, 0)]
            self.offline_complete = True
        for token in tokens:
            self.offline.append(token)
            self.counts.offline += 1
            self._shown()
            self.emit(TokenGenerated(before, token, TokenSource.OFFLINE))
            before += 1

    def repair(self, replaced: int, tokens: list[int], sources: list[TokenSource], kept: int) -> None:
        """The first ``replaced`` offline tokens are verified and replaced by ``tokens`` (all confirmed)."""
        start = len(self.confirmed)
        tokens, sources = self._stopped(tokens, sources)
        if self.stop is not None:
            replaced = len(self.offline)  # nothing after the stop stays
        kept = min(kept, len(tokens))
        del self.offline[:replaced]
        self.confirmed += tokens
        self.counts.kept += kept
        self._count(sources)
        if not self.offline:
            self.offline_complete = False
        self._shown()
        self.emit(Repaired(start, start + replaced, tuple(tokens), tuple(sources), kept))

    # -- internals -------------------------------------------------------------------------------
    def _stopped(
        self, tokens: list[int], sources: list[TokenSource] | None = None
    ) -> tuple[list[int], list[TokenSource]]:
        """``tokens`` to confirm next (and their sources), cut at a stop (which ends the generation)."""
        if sources is None:
            sources = [TokenSource.DRAFT_ACCEPTED] * (len(tokens) - 1) + [TokenSource.TARGET]
        start = len(self.confirmed)
        verdict = self.stop_condition.check(self.confirmed + tokens, self.decode, new_from=start)
        if verdict is None:
            return tokens, sources
        self.stop = verdict[1]
        keep = max(verdict[0] - start, 0)
        return tokens[:keep], sources[:keep]

    def _append(self, token: int, source: TokenSource) -> None:
        self._shown()
        self.emit(TokenGenerated(len(self.confirmed), token, source))
        self.confirmed.append(token)
        self._count([source])

    def _count(self, sources: list[TokenSource]) -> None:
        for source in sources:
            if source is TokenSource.TARGET:
                self.counts.target += 1
            else:
                self.counts.accepted += 1

    def _shown(self) -> None:
        now = time.perf_counter()
        if self.first_token_at is None:
            self.first_token_at = now
        elif self.last_token_at is not None:
            self.longest_pause_s = max(self.longest_pause_s, now - self.last_token_at)
        self.last_token_at = now
