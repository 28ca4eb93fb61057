"""moa-chat's Textual app: the transcript with token provenance, the status bar, chats, settings.

app.py             MoaChatApp (wiring only) and run_app(), what ``moa-chat`` calls
chat_screen.py     the chat: sidebar, transcript, input, status; the answer's life (engine calls)
chats_screen.py    its base: the chats (open, new, rename, delete, export, search; store calls)
answer.py          one answer being written: the stream buffered, flushed at 20 Hz, saved at 1 Hz
reply.py           a reply's tokens and provenance, folded from the engine's events (no widgets)
live_stats.py      the link and the figures, folded from the engine's events (no widgets)
conversation.py    the open conversation and its store calls
keys.py            every key, for the bindings and the help screen
widgets: transcript, reply_view, user_message, legend, status_bar, stats_panel, network_bar,
sidebar, prompt; screens: help_screen, settings_screen, ask_screen, confirm_screen; chat.tcss
"""

from app.chat.app import MoaChatApp, run_app

__all__ = ["MoaChatApp", "run_app"]
