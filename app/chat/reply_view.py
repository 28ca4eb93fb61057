"""One assistant reply in the transcript: provenance-coloured text while it streams, Markdown when done.

Only what changed is redrawn: the reply is cut into paragraphs (at blank lines), one Static each,
and a flush updates the paragraphs whose runs differ from what they show (while streaming, the
last one; after a repair, the repaired ones). So a refresh costs the paragraph being written, not
the whole answer (re-rendering the whole message per chunk is what makes Elia lag).
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Markdown, Static

from app.chat.legend import styled
from app.chat.markdown_parser import chat_markdown_parser
from app.chat.reply import Reply, Run

Block = tuple[Run, ...]


def split_blocks(runs: list[Run]) -> list[Block]:
    """Runs cut at blank lines ("\\n\\n"): one block per paragraph, styles kept across the cut."""
    blocks: list[list[Run]] = [[]]
    for text, label in runs:
        for index, part in enumerate(text.split("\n\n")):
            if index:
                blocks.append([])
            if part:
                blocks[-1].append((part, label))
    return [tuple(block) for block in blocks]


class ReplyView(Vertical):
    """See the module docstring. The app tells it what to show; it posts :class:`Selected` when clicked."""

    class Selected(Message):
        """The user clicked this reply (F4 then switches its view)."""

        def __init__(self, view: ReplyView) -> None:
            super().__init__()
            self.view = view

    def __init__(self, reply: Reply, *, streaming: bool, header: str = "") -> None:
        super().__init__(classes="reply")
        self.reply = reply
        self.streaming = streaming
        self.markdown = False
        self.show_rejected = False
        self._header_text = header or ("writing…" if streaming else "")
        self._blocks: list[Block] = []
        self._statics: list[Static] = []
        self._ready = False  # children composed: Textual's is_mounted turns True only after on_mount returns

    def compose(self) -> ComposeResult:
        yield Static(self._header_content(), classes="reply-header")
        yield Vertical(classes="reply-blocks")
        yield Markdown("", classes="reply-markdown", parser_factory=chat_markdown_parser)

    def on_mount(self) -> None:
        """Show what was asked before the children existed (a short answer can finish before this)."""
        self._ready = True
        self.redraw()
        self.set_markdown(self.markdown)

    def on_click(self, event: events.Click) -> None:
        self.post_message(self.Selected(self))

    def redraw(self) -> None:
        """Bring the provenance view up to date with ``reply`` (only the changed paragraphs)."""
        if not self._ready:
            return
        blocks = split_blocks(self.reply.runs(self.show_rejected))
        container = self.query_one(".reply-blocks", Vertical)
        for index, block in enumerate(blocks):
            if index >= len(self._statics):
                static = Static(styled(block), classes="reply-block")
                self._statics.append(static)
                container.mount(static)
            elif index >= len(self._blocks) or self._blocks[index] != block:
                self._update(self._statics[index], styled(block))
        for static in self._statics[len(blocks) :]:
            static.remove()
        del self._statics[len(blocks) :]
        self._blocks = blocks

    @staticmethod
    def _update(static: Static, content: Content) -> None:
        """Show ``content``; lay the screen out again only if the paragraph's height changed (a new line).

        Most flushes add a few words to the last line: skipping the layout pass then is what keeps a
        long transcript cheap to stream into.
        """
        width = static.size.width
        styles = static.styles  # what Textual itself passes as the rules (its RulesMap annotation is narrower)
        same_height = width > 0 and content.get_height(styles, width) == static.size.height  # type: ignore[arg-type]
        static.update(content, layout=not same_height)

    def set_header(self, text: str) -> None:
        self._header_text = text
        if self._ready:
            self.query_one(".reply-header", Static).update(self._header_content())

    def set_show_rejected(self, shown: bool) -> None:
        self.show_rejected = shown
        self.redraw()

    def finish(self, header: str, markdown: bool) -> None:
        """The reply is complete (or stopped): say so, and show it as Markdown if asked."""
        self.streaming = False
        self.redraw()
        self.set_header(header)
        self.set_markdown(markdown)

    def set_markdown(self, markdown: bool) -> None:
        """Markdown (rendered, code highlighted) or the provenance view; never Markdown while streaming."""
        self.markdown = markdown and not self.streaming
        self.set_header(self._header_text)
        if not self._ready:
            return
        view = self.query_one(".reply-markdown", Markdown)
        if self.markdown:
            view.update(self.reply.text)  # the whole text once: a final update also fixes blank code fences
        view.display = self.markdown
        self.query_one(".reply-blocks", Vertical).display = not self.markdown

    def toggle_view(self) -> None:
        self.set_markdown(not self.markdown)

    def _header_content(self) -> Content:
        view = "markdown" if self.markdown else "provenance"
        return Content.assemble(
            ("assistant", "bold"), ("  " + self._header_text, "dim"), (f"  [{view} · F4]", "dim italic")
        )
