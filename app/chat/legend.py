"""How provenance looks: one style per label, and the legend line that explains them."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content
from textual.widgets import Static

from app.chat.reply import ACCEPTED, OFFLINE, REJECTED, REPAIRED, TARGET, Run

# Theme variables, so every theme (and the light ones) keeps the meaning readable.
STYLES: dict[str, str] = {
    ACCEPTED: "$text-success",  # drafted here, confirmed by the verifier
    TARGET: "$text-primary",  # the target's own token: a correction or the bonus
    OFFLINE: "italic underline $text-warning",  # written without the verifier: unverified
    REPAIRED: "$text-secondary on $secondary-muted",  # checked after an offline spell
    REJECTED: "strike $text-error",  # drafted, refused (shown on demand)
}
NAMES: dict[str, str] = {
    ACCEPTED: "accepted draft",
    TARGET: "target",
    OFFLINE: "offline (unverified)",
    REPAIRED: "repaired",
    REJECTED: "rejected draft",
}


def styled(runs: Sequence[Run]) -> Content:
    """``(text, label)`` runs as one Content, each run in its label's style."""
    return Content.assemble(*((text, STYLES.get(label, "")) for text, label in runs))


def legend_content(show_rejected: bool) -> Content:
    parts: list[tuple[str, str] | str] = []
    for label in (ACCEPTED, TARGET, OFFLINE, REPAIRED, REJECTED):
        parts += [(NAMES[label], STYLES[label]), " " if label == REJECTED else "  "]
    parts.append(("(F3 hides)" if show_rejected else "(F3 shows)", "dim"))
    return Content.assemble(*parts)


class Legend(Static):
    """One line under the transcript naming each provenance style."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's keyword
        super().__init__(legend_content(False), id=id)

    def show_rejected(self, shown: bool) -> None:
        self.update(legend_content(shown))
