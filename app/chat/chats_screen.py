"""The chats side of the chat screen: the sidebar's list, search, open, rename, delete, export.

:class:`~app.chat.chat_screen.ChatScreen` derives from it: the chats live here, the answer's life
(sending, streaming, stopping, regenerating) there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.screen import Screen

from app.chat.answer import header_for
from app.chat.ask_screen import AskScreen
from app.chat.confirm_screen import ConfirmScreen
from app.chat.conversation import Conversation, export_to
from app.chat.failure import describe
from app.chat.prompt import PromptInput
from app.chat.reply import Reply
from app.chat.sidebar import Sidebar
from app.chat.transcript import Transcript
from app.settings import Settings
from app.store import ConversationStore, StoreError

BUSY = "an answer is being written: Esc stops it"


class ChatsScreen(Screen[None]):
    """See the module docstring."""

    store: ConversationStore
    settings: Settings
    conversation: Conversation
    search: str

    @property
    def answering(self) -> bool:
        """An answer is being written (no chat may be switched meanwhile)."""
        return False

    def fail(self, exc: BaseException, doing: str = "") -> None:
        failure = describe(exc)
        title = f"{failure.title} ({doing})" if doing else failure.title
        self.app.notify(failure.message, title=title, severity="error", timeout=12, markup=False)

    def action_new_chat(self) -> None:
        if self._busy():
            return
        self.conversation = Conversation(self.store, None, self.settings.system_prompt)
        self.show_conversation()
        self.query_one(PromptInput).focus()

    # -- conversations (sidebar) ---------------------------------------------------------------------
    def show_conversation(self) -> None:
        transcript = self.query_one(Transcript)
        transcript.clear()
        for message in self.conversation.messages:
            if message.role == "user":
                transcript.add_user(message.content)
            elif message.role == "assistant":
                reply = Reply.from_runs(message.provenance, message.content)
                transcript.add_reply(reply, streaming=False, header=header_for(message.stats, message.complete))
        self.refresh_sidebar()

    def refresh_sidebar(self) -> None:
        try:
            summaries = self.store.list(self.search)
        except StoreError as exc:
            self.fail(exc)
            return
        self.query_one(Sidebar).show(summaries, self.conversation.id)

    def on_sidebar_search_changed(self, message: Sidebar.SearchChanged) -> None:
        self.search = message.text
        self.refresh_sidebar()

    def on_sidebar_chat_chosen(self, message: Sidebar.ChatChosen) -> None:
        if self._busy() or message.conversation_id == self.conversation.id:
            return
        try:
            self.conversation = Conversation.load(self.store, message.conversation_id)
        except StoreError as exc:
            self.fail(exc)
            return
        self.show_conversation()

    def on_sidebar_action_requested(self, message: Sidebar.ActionRequested) -> None:
        chat = message.conversation_id
        if message.action == "new":
            self.action_new_chat()
        elif chat is None:
            self.app.notify("no chat chosen", severity="warning")
        elif message.action == "rename":
            self.rename_chat(chat)
        elif message.action == "delete":
            self.delete_chat(chat)
        else:
            self.export_chat("markdown" if message.action == "export_markdown" else "json", chat)

    def rename_chat(self, chat: int | None = None) -> None:
        chat = chat if chat is not None else self.conversation.id
        if chat is None:
            return
        title = next((s.title for s in self.store.list() if s.id == chat), "")

        def rename(new_title: str | None) -> None:
            if new_title:
                self._store_call(lambda: self.store.rename(chat, new_title))
                self.refresh_sidebar()

        self.app.push_screen(AskScreen("New title for the chat:", title), rename)

    def delete_chat(self, chat: int | None = None) -> None:
        chat = chat if chat is not None else self.conversation.id
        if chat is None or (chat == self.conversation.id and self._busy()):
            return

        def delete(yes: bool | None) -> None:
            if not yes:
                return
            self._store_call(lambda: self.store.delete(chat))
            if chat == self.conversation.id:
                self.action_new_chat()
            self.refresh_sidebar()

        self.app.push_screen(ConfirmScreen("Delete this chat and all its messages?"), delete)

    def export_chat(self, kind: str, chat: int | None = None) -> None:
        chat = chat if chat is not None else self.conversation.id
        if chat is None:
            self.app.notify("nothing to export yet", severity="warning")
            return
        try:
            path = export_to(self.store, chat, kind, Path.cwd())
        except (StoreError, OSError) as exc:
            self.fail(exc, "export")
            return
        self.app.notify(f"saved {path}", title="Exported", markup=False)

    def _store_call(self, call: Callable[[], object]) -> None:
        try:
            call()
        except StoreError as exc:
            self.fail(exc)

    def _busy(self) -> bool:
        if self.answering:
            self.app.notify(BUSY, severity="warning")
        return self.answering

