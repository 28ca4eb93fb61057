"""The stats panel (Ctrl+T): acceptance by draft depth, and live plots of tokens/s and tau over the answer."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Sparkline, Static

from app.chat.live_stats import LiveStats

BAR_WIDTH = 16


def depth_content(acceptance: Sequence[float]) -> Content:
    """One bar per draft depth: how often the token drafted at that depth was accepted."""
    if not acceptance:
        return Content.assemble(("acceptance by depth: –", "dim"))
    parts: list[tuple[str, str] | str] = [("acceptance by depth\n", "bold")]
    for depth, rate in enumerate(acceptance, start=1):
        filled = round(max(0.0, min(1.0, rate)) * BAR_WIDTH)
        parts += [
            f"{depth:>2} ",
            ("█" * filled, "$text-success"),
            ("░" * (BAR_WIDTH - filled), "dim"),
            f" {rate * 100:3.0f}%\n",
        ]
    return Content.assemble(*parts)


def _last(values: Sequence[float], template: str) -> str:
    return template.format(values[-1]) if values else "–"


class StatsPanel(Vertical):
    """See the module docstring; the app calls :meth:`show` when the stats changed and the panel is open."""

    def compose(self) -> ComposeResult:
        yield Static(depth_content(()), id="depths")
        yield Static("tokens/s", id="speed-label")
        yield Sparkline([], id="speed")
        yield Static("tau", id="tau-label")
        yield Sparkline([], id="tau")

    def show(self, stats: LiveStats) -> None:
        latest = stats.latest
        self.query_one("#depths", Static).update(depth_content(latest.acceptance_by_depth if latest else ()))
        self.query_one("#speed-label", Static).update(
            Content.assemble(("tokens/s ", "bold"), _last(stats.tokens_per_s, "{:.1f}"))
        )
        self.query_one("#tau-label", Static).update(Content.assemble(("tau ", "bold"), _last(stats.tau, "{:.2f}")))
        self.query_one("#speed", Sparkline).data = list(stats.tokens_per_s)
        self.query_one("#tau", Sparkline).data = list(stats.tau)
