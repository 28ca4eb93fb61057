"""The chat: sidebar, transcript, input, status; it turns what the user does into engine and store calls.

Events from the engine come two ways: the answer's own stream (tokens, repairs, stats, Finished),
read into an :class:`~app.chat.answer.Answer` and folded in on a 20 Hz timer; and the engine's
subscription (the link's state, at any time), posted here as :class:`ChatScreen.EngineNoticed`
(``post_message`` is thread-safe, so the engine may call from its own thread). A failure is a
state of the app: a notification, the reply marked, the typed text given back, never a crash.
"""

from __future__ import annotations

import dataclasses

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message

from app.chat.answer import FLUSH_HZ, Answer, header_for
from app.chat.chats_screen import BUSY, ChatsScreen
from app.chat.conversation import Conversation
from app.chat.failure import describe
from app.chat.help_screen import HelpScreen
from app.chat.keys import bindings
from app.chat.legend import Legend
from app.chat.live_stats import LiveStats
from app.chat.network_bar import NetworkBar
from app.chat.prompt import PromptInput
from app.chat.reply_view import ReplyView
from app.chat.settings_screen import SettingsScreen
from app.chat.sidebar import Sidebar
from app.chat.stats_panel import StatsPanel
from app.chat.status_bar import StatusBar
from app.chat.transcript import Transcript
from app.demo import LinkControl
from app.engine.chat import ChatEngine
from app.engine.events import EngineEvent, LinkChanged, LinkLost, LinkRestored, OfflineBudgetReached, Reconnecting
from app.settings import Settings
from app.store import ConversationStore, StoreError

LINK_EVENTS = (LinkChanged, LinkLost, Reconnecting, LinkRestored)


class ChatScreen(ChatsScreen):
    """See the module docstring."""

    BINDINGS = bindings(with_link=True)

    class EngineNoticed(Message):
        """The engine reported a link event (from its subscription)."""

        def __init__(self, event: EngineEvent) -> None:
            super().__init__()
            self.event = event

    def __init__(
        self,
        engine: ChatEngine,
        store: ConversationStore,
        settings: Settings,
        link_control: LinkControl | None,
    ) -> None:
        super().__init__()
        self.engine = engine
        self.store = store
        self.settings = settings
        self.link_control = link_control
        self.conversation = Conversation(store, None, settings.system_prompt)
        self.stats = LiveStats()
        self.answer: Answer | None = None
        self.answer_view: ReplyView | None = None
        self.search = ""
        self._save_failed = False

    @property
    def answering(self) -> bool:
        return self.answer is not None

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield Sidebar(id="sidebar")
            with Vertical(id="center"):
                if self.link_control is not None:
                    yield NetworkBar(self.link_control.presets, self.link_control.preset, id="network")
                yield Transcript(id="transcript")
                yield Legend(id="legend")
                yield PromptInput(id="prompt")
            yield StatsPanel(id="stats")
        yield StatusBar(self.engine.describe(), id="status")

    def on_mount(self) -> None:
        self.query_one(StatsPanel).display = False
        self.set_interval(1 / FLUSH_HZ, self.flush)
        if self.link_control is not None:
            self.link_control.subscribe(self._preset_changed)
        try:
            self.conversation = Conversation.latest(self.store, self.settings.system_prompt)
        except StoreError as exc:
            self.fail(exc)
        self.show_conversation()
        self.show_status()
        self.query_one(PromptInput).focus()

    # -- the engine ------------------------------------------------------------------------------
    def notice(self, event: EngineEvent) -> None:
        """The engine's subscription: link events become messages (any thread); the rest come by stream."""
        if isinstance(event, LINK_EVENTS):
            self.post_message(self.EngineNoticed(event))

    def on_chat_screen_engine_noticed(self, message: EngineNoticed) -> None:
        if self.stats.apply(message.event):
            self.show_status()

    def show_status(self) -> None:
        preset = self.link_control.preset if self.link_control is not None else None
        self.query_one(StatusBar).show(self.stats, preset)
        panel = self.query_one(StatsPanel)
        if panel.display:
            panel.show(self.stats)

    # -- sending and answering -------------------------------------------------------------------
    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.send(message.text)

    def send(self, text: str) -> None:
        prompt = self.query_one(PromptInput)
        if self.answer is not None:
            self.app.notify(BUSY, severity="warning")
            prompt.restore(text)
            return
        start = len(self.conversation.messages)
        try:
            self.conversation.add("user", text)
            reply = self.conversation.add("assistant", "", complete=False)
        except StoreError as exc:
            self._cut_quietly(start)
            self.fail(exc, "your message is back in the input")
            prompt.restore(text)
            return
        self.query_one(Transcript).add_user(text)
        self.start_answer(reply.id, text)

    def start_answer(self, message_id: int, prompt: str) -> None:
        self.answer = Answer(message_id, prompt)
        self.answer_view = self.query_one(Transcript).add_reply(self.answer.reply, streaming=True)
        self.stats.start_answer()
        self.show_status()
        self.run_worker(self._run_answer(self.answer), group="answer", exit_on_error=False)

    async def _run_answer(self, answer: Answer) -> None:
        opened = getattr(self.app, "engine_opened", None)
        if opened is not None:
            await opened.wait()
        await answer.run(self.engine, self.conversation.turns(), self.settings.decode_config())

    def flush(self) -> None:
        """The 20 Hz timer: fold the buffered events into the reply, the status and (1 Hz) the store."""
        answer, view = self.answer, self.answer_view
        if answer is None or view is None:
            return
        redraw = status = False
        for event in answer.take():
            redraw |= answer.reply.apply(event)
            status |= self.stats.apply(event)
            if isinstance(event, OfflineBudgetReached):
                self.app.notify(f"{event.budget} unverified tokens written: waiting for the verifier", timeout=6)
        if redraw:
            view.redraw()
        if status:
            self.show_status()
        if answer.done and not answer.pending:
            self.finish_answer(answer, view)
        elif answer.save_due():
            self.save_answer(answer, complete=False)

    def save_answer(self, answer: Answer, complete: bool) -> None:
        reply, stats = answer.reply, answer.stats_record() if complete else None
        answer.mark_saved()
        try:
            self.store.update_message(answer.message_id, reply.text, reply.provenance(), complete, stats)
        except StoreError as exc:
            if not self._save_failed:  # once per answer: the answer goes on, shown but not saved
                self.fail(exc, "the answer is shown but not saved")
            self._save_failed = True
            return
        for message in self.conversation.messages:
            if message.id == answer.message_id:
                self.conversation.replace(
                    dataclasses.replace(
                        message, content=reply.text, provenance=reply.provenance(), complete=complete, stats=stats
                    )
                )

    def finish_answer(self, answer: Answer, view: ReplyView) -> None:
        self.answer, self.answer_view, self.stats.generating = None, None, False
        if answer.error is not None and not answer.reply.texts:
            self._undo_answer(answer)
        elif answer.error is not None:
            self.save_answer(answer, complete=False)
            view.finish(f"cut off: {describe(answer.error).title}", markdown=False)
            self.fail(answer.error)
        else:
            self.save_answer(answer, complete=True)
            view.finish(header_for(answer.stats_record(), True), self.query_one(Transcript).markdown_when_done)
        self._save_failed = False
        self.show_status()
        self.refresh_sidebar()

    def _undo_answer(self, answer: Answer) -> None:
        """An answer that failed before its first token: drop it, and give the user's text back."""
        assert answer.error is not None
        index = next(i for i, m in enumerate(self.conversation.messages) if m.id == answer.message_id)
        user_typed = index > 0 and self.conversation.messages[index - 1].content == answer.prompt
        start = index - 1 if user_typed else index
        self._cut_quietly(start)
        self.query_one(Transcript).remove_last(index + 1 - start)
        if user_typed:
            self.query_one(PromptInput).restore(answer.prompt)
        self.fail(answer.error, "your message is back in the input" if user_typed else "")

    def _cut_quietly(self, index: int) -> int:
        try:
            return self.conversation.cut_from(index)
        except StoreError as exc:
            self.fail(exc)
            return 0

    # -- actions (keys, palette) ------------------------------------------------------------------
    def action_stop(self) -> None:
        if self.answer is None or self.answer.stopping:
            return
        self.answer.stopping = True
        if self.answer_view is not None:
            self.answer_view.set_header("stopping…")
        self.run_worker(self.engine.cancel(), group="cancel", exit_on_error=False)

    def action_regenerate(self) -> None:
        if self._busy():
            return
        index = self.conversation.last_index("assistant")
        if index is None or index == 0:
            self.app.notify("there is no answer to write again", severity="warning")
            return
        prompt = self.conversation.messages[index - 1].content
        self.query_one(Transcript).remove_last(self._cut_quietly(index))
        try:
            reply = self.conversation.add("assistant", "", complete=False)
        except StoreError as exc:
            self.fail(exc)
            return
        self.start_answer(reply.id, prompt)

    def action_edit_last(self) -> None:
        if self._busy():
            return
        index = self.conversation.last_index("user")
        if index is None:
            self.app.notify("there is no message to edit", severity="warning")
            return
        text = self.conversation.messages[index].content
        self.query_one(Transcript).remove_last(self._cut_quietly(index))
        self.query_one(PromptInput).restore(text)

    def on_prompt_input_edit_last_requested(self, message: PromptInput.EditLastRequested) -> None:
        self.action_edit_last()

    def action_toggle_rejected(self) -> None:
        transcript = self.query_one(Transcript)
        transcript.set_show_rejected(not transcript.show_rejected)
        self.query_one(Legend).show_rejected(transcript.show_rejected)

    def action_toggle_view(self) -> None:
        self.query_one(Transcript).toggle_view()

    def on_reply_view_selected(self, message: ReplyView.Selected) -> None:
        self.query_one(Transcript).select(message.view)

    def action_toggle_sidebar(self) -> None:
        sidebar = self.query_one(Sidebar)
        sidebar.display = not sidebar.display

    def action_search_chats(self) -> None:
        sidebar = self.query_one(Sidebar)
        sidebar.display = True
        sidebar.focus_search()

    def action_toggle_stats(self) -> None:
        panel = self.query_one(StatsPanel)
        panel.display = not panel.display
        self.show_status()

    def action_focus_input(self) -> None:
        self.query_one(PromptInput).focus()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.link_control is not None))

    def action_settings(self) -> None:
        self.app.push_screen(SettingsScreen(self.settings, self.app.available_themes), self._settings_chosen)

    def _settings_chosen(self, settings: Settings | None) -> None:
        if settings is not None:
            self.settings = settings
            self.post_message(SettingsChanged(settings))

    # -- the demo's link ---------------------------------------------------------------------------
    def action_link(self, name: str) -> None:
        if self.link_control is None:
            self.app.notify("the link can be switched in the demo only (moa-chat --demo)", severity="warning")
            return
        try:
            self.link_control.set_preset(name)
        except Exception as exc:  # a UI boundary: the shaper's failure is a message
            self.fail(exc, f"switching the link to {name}")
        self._show_preset(self.link_control.preset)

    def on_network_bar_preset_chosen(self, message: NetworkBar.PresetChosen) -> None:
        self.action_link(message.name)

    def _preset_changed(self, name: str) -> None:
        """LinkControl's listener (any thread): show the preset someone else chose."""
        self.post_message(PresetShown(name))

    def on_preset_shown(self, message: PresetShown) -> None:
        self._show_preset(message.name)

    def _show_preset(self, name: str) -> None:
        for bar in self.query(NetworkBar):
            bar.show_current(name)
        self.show_status()

    def save_interrupted(self) -> None:
        """Quitting: keep what is written of the current answer (marked incomplete)."""
        if self.answer is not None:
            for event in self.answer.take():
                self.answer.reply.apply(event)
            self.save_answer(self.answer, complete=False)


class PresetShown(Message):
    """The demo's link changed preset (LinkControl's listener, any thread)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class SettingsChanged(Message):
    """The settings screen returned new settings: the app saves and applies them."""

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
