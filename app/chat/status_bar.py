"""The status bar: mode (with "stream" when it streams speculatively), link with RTT, rolling tau, acceptance,
draft shape, tokens/s, round trips, bytes, device."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from app.chat.live_stats import LiveStats
from app.engine.chat import EngineInfo
from app.engine.events import LinkState, StatsUpdated

BADGES: dict[LinkState, tuple[str, str]] = {
    LinkState.CONNECTING: ("… connecting", "$text-warning"),
    LinkState.ONLINE: ("● online", "bold $text-success"),
    LinkState.DEGRADED: ("◐ degraded", "bold $text-warning"),
    LinkState.OFFLINE: (" ○ OFFLINE ", "bold $text-error on $error-muted"),
    LinkState.RECONNECTING: ("↻ reconnecting", "bold $text-warning"),
    LinkState.LOCAL: ("■ local", "bold $text-accent"),
}
SEPARATOR = (" │ ", "dim")


def _figure(value: float | None, template: str) -> str:
    return "–" if value is None else template.format(value)


def _acceptance(latest: StatsUpdated | None) -> list[tuple[str, str] | str]:
    """Accepted drafts: of those sent for verification (rounds), or, when none was sent (a speculative
    stream: the server applies the proposals itself), the share of the answer the draft wrote."""
    if latest is not None and latest.drafted_share > 0 and not latest.acceptance_by_depth:
        return ["  drafted ", _figure(latest.drafted_share * 100, "{:.0f}%")]
    return ["  acc ", _figure(latest.acceptance_rate * 100 if latest else None, "{:.0f}%")]


def status_content(info: EngineInfo, stats: LiveStats, preset: str | None = None) -> Content:
    """One line: what runs where, then the link, then the figures of the current (or last) answer."""
    badge, style = BADGES[stats.link]
    link: list[tuple[str, str] | str] = [(badge, style)]
    if stats.rtt_ms is not None and stats.link in (LinkState.ONLINE, LinkState.DEGRADED):
        link.append(f" {stats.rtt_ms:.0f} ms")
    if preset is not None:
        link.append((f" [{preset}]", "dim"))
    latest = stats.latest
    parts: list[tuple[str, str] | str] = [
        (info.mode, "bold"),
        *([(" stream", "bold $text-accent")] if info.stream else []),
        f" {info.draft}→{info.target} · {info.device}",
        SEPARATOR,
        *link,
        SEPARATOR,
        "τ ",
        (_figure(latest.tau if latest else None, "{:.2f}"), "bold"),
        *_acceptance(latest),
        *([(f" · {latest.shape}", "dim")] if latest and latest.shape else []),
        SEPARATOR,
        (_figure(stats.tokens_per_s_now, "{:.1f}"), "bold"),
        " tok/s",
        SEPARATOR,
        _figure(latest.round_trips_per_100 if latest else None, "{:.0f}"),
        " rt/100",
        SEPARATOR,
        _figure(stats.bytes_per_token, "{:.0f}"),
        " B/tok",
    ]
    if stats.generating:
        parts += [SEPARATOR, ("writing…", "italic $text-accent")]
    return Content.assemble(*parts)


class StatusBar(Static):
    """See the module docstring; the app calls :meth:`show` when anything in it changed."""

    def __init__(self, info: EngineInfo, *, id: str | None = None) -> None:  # noqa: A002 - Textual's keyword
        super().__init__(id=id)
        self.info = info

    def show(self, stats: LiveStats, preset: str | None = None) -> None:
        self.update(status_content(self.info, stats, preset))
