"""One assistant reply as the transcript shows it: every token's text and provenance, folded from events.

The engine's events (:mod:`app.engine.events`) arrive in order; :meth:`Reply.apply` folds them:

    TokenGenerated  appends a token with its source (DRAFT_ACCEPTED, TARGET or OFFLINE)
    Repaired        replaces an offline span by the verifier's tokens, labelled "repaired"
    DraftRejected   remembers the refused drafts at their position (shown on demand, struck out)

Labels are plain strings: a :class:`~drafts.decoding.events.TokenSource` value ("accepted",
"target", "offline", "rejected") or ``"repaired"``: the same strings the conversation store keeps,
so a reply read back from the store (:meth:`Reply.from_runs`) shows exactly as it streamed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.engine.events import DraftRejected, EngineEvent, Repaired, TokenGenerated
from drafts.decoding.events import TokenSource

ACCEPTED = TokenSource.DRAFT_ACCEPTED.value
TARGET = TokenSource.TARGET.value
OFFLINE = TokenSource.OFFLINE.value
REJECTED = TokenSource.DRAFT_REJECTED.value
REPAIRED = "repaired"  # a span the verifier checked after an offline spell (kept or replaced)

Run = tuple[str, str]  # (text, label)


@dataclass
class Reply:
    """See the module docstring."""

    texts: list[str] = field(default_factory=list)  # one per output token
    labels: list[str] = field(default_factory=list)
    rejected: dict[int, list[str]] = field(default_factory=dict)  # position -> refused drafts shown before it
    repairs: int = 0  # Repaired events applied (the transcript flashes the span)

    @classmethod
    def from_runs(cls, runs: Iterable[Sequence[str]], content: str = "") -> Reply:
        """A stored reply: its (text, label) runs, or its plain content when it has none."""
        reply = cls()
        for text, label in runs:
            reply.texts.append(text)
            reply.labels.append(label)
        if not reply.texts and content:
            reply.texts.append(content)
            reply.labels.append(TARGET)
        return reply

    def apply(self, event: EngineEvent) -> bool:
        """Fold ``event`` in; whether the shown text changed."""
        if isinstance(event, TokenGenerated):
            self._append(event)
            return True
        if isinstance(event, Repaired):
            self._repair(event)
            return True
        if isinstance(event, DraftRejected):
            self.rejected.setdefault(event.position, []).append(_rejected_text(event))
            return True
        return False

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def count(self, label: str) -> int:
        return sum(1 for each in self.labels if each == label)

    def runs(self, show_rejected: bool = False) -> list[Run]:
        """The text as runs of one label each; with ``show_rejected``, refused drafts interleaved."""
        runs: list[Run] = []
        for position, (text, label) in enumerate(zip(self.texts, self.labels, strict=True)):
            if show_rejected and position in self.rejected:
                for refused in self.rejected[position]:
                    _extend(runs, refused, REJECTED)
            _extend(runs, text, label)
        if show_rejected:
            for position in sorted(p for p in self.rejected if p >= len(self.texts)):
                for refused in self.rejected[position]:
                    _extend(runs, refused, REJECTED)
        return runs

    def provenance(self) -> list[Run]:
        """What the store keeps: the output's runs, refused drafts left out."""
        return self.runs(show_rejected=False)

    def _append(self, event: TokenGenerated) -> None:
        if event.position != len(self.texts):  # a gap would be an engine bug: keep the text in order anyway
            del self.texts[event.position :], self.labels[event.position :]
        self.texts.append(event.text)
        self.labels.append(event.source.value)

    def _repair(self, event: Repaired) -> None:
        texts = list(event.texts) if event.texts else [""] * len(event.tokens)
        self.texts[event.start : event.end] = texts
        self.labels[event.start : event.end] = [REPAIRED] * len(texts)
        for position in [p for p in self.rejected if p >= event.start]:
            del self.rejected[position]
        self.repairs += 1


def _extend(runs: list[Run], text: str, label: str) -> None:
    if not text:
        return
    if runs and runs[-1][1] == label:
        runs[-1] = (runs[-1][0] + text, label)
    else:
        runs.append((text, label))


def _rejected_text(event: DraftRejected) -> str:
    """The refused drafts' text when the engine sends it, else a marker with their count."""
    texts = getattr(event, "texts", ())
    if texts:
        return "".join(texts)
    return f"⟨{len(event.tokens)} refused⟩"
