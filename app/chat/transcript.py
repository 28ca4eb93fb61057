"""The conversation: the user's messages and the replies, following the bottom while one streams.

``anchor()`` keeps the view at the bottom as text arrives and lets go as soon as the user scrolls
up (to read history while an answer streams); scrolling back to the bottom follows again.
"""

from __future__ import annotations

from textual.containers import VerticalScroll

from app.chat.reply import Reply
from app.chat.reply_view import ReplyView
from app.chat.user_message import UserMessage


class Transcript(VerticalScroll):
    """See the module docstring."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's keyword
        super().__init__(id=id)
        self.show_rejected = False
        self.markdown_when_done = True  # finished replies show as Markdown (F4 switches, and sets this)
        self.selected: ReplyView | None = None

    def on_mount(self) -> None:
        self.anchor()

    def clear(self) -> None:
        self.selected = None
        self.remove_children()

    def add_user(self, text: str) -> UserMessage:
        message = UserMessage(text)
        self.mount(message)
        return message

    def add_reply(self, reply: Reply, *, streaming: bool, header: str = "") -> ReplyView:
        view = ReplyView(reply, streaming=streaming, header=header)
        view.show_rejected = self.show_rejected
        self.mount(view)
        if not streaming:
            view.call_after_refresh(view.set_markdown, self.markdown_when_done)
        return view

    def replies(self) -> list[ReplyView]:
        return list(self.query(ReplyView))

    def target_reply(self) -> ReplyView | None:
        """The reply F4 acts on: the one clicked last, else the newest."""
        if self.selected is not None and self.selected.is_attached:
            return self.selected
        replies = self.replies()
        return replies[-1] if replies else None

    def select(self, view: ReplyView) -> None:
        if self.selected is not None and self.selected.is_attached:
            self.selected.remove_class("-selected")
        self.selected = view
        view.add_class("-selected")

    def toggle_view(self) -> None:
        view = self.target_reply()
        if view is not None and not view.streaming:
            view.toggle_view()
            self.markdown_when_done = view.markdown

    def set_show_rejected(self, shown: bool) -> None:
        self.show_rejected = shown
        for view in self.replies():
            view.set_show_rejected(shown)

    def remove_last(self, count: int) -> None:
        """Drop the last ``count`` messages (a failed send, an edit, a regenerate)."""
        for child in list(self.children)[-count:] if count else []:
            if child is self.selected:
                self.selected = None
            child.remove()
