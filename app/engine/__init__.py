"""The remote engine: draft here, verify on a moa-server, keep writing when the link drops.

    config.py        EngineConfig, LinkConfig (frozen, validated once)
    client_draft.py  ClientDraft: the draft and what it knows of its target
    draftless.py     Draftless: a client with no draft (the server decodes: "API streaming")
    events.py        what a UI consumes: TokenGenerated ... Finished, and Shown (their fold)
    chat.py          ChatEngine: what a chat UI drives (messages in, events out), EngineInfo
    remote_chat.py   RemoteChatEngine: the ChatEngine over RemoteEngine (and --api with Draftless)
    remote.py        RemoteEngine: the async API over prompt tokens (stream, generate, cancel)
    sync.py          EngineThread: the same for synchronous callers
    generation.py    one generation: start (cut back, prefill), then the phases below until a stop
    online.py        online rounds: chains drafted ahead while the last is verified, or EAGLE-2 trees
    spell.py         an offline spell: keep writing while the session reconnects (budgeted)
    repair.py        a repair: verify the offline tokens, replace them from the first rejection
    api_generation.py  one generation decoded by the server alone, streamed
    pacing.py        Pacer: the chain length for the measured round trip and acceptance
    transcript.py    Transcript: confirmed and offline output, stop rules, token events; Scribe:
                     runs its verbs (the text) on a thread of their own, off the socket's loop
    text.py          Detokenizer: incremental UTF-8-safe text with offsets, stop strings
    progress.py      Progress: StatsUpdated during a generation, GenerationStats at its end
    offline.py       what writes while offline: the draft alone (its core chain), or a GGUF model
    session.py       VerifierSession: (re)connect, resume or replay, traffic
    link.py          Link: one WebSocket connection around the sans-I/O ClientProtocol
    errors.py        the engine's branch of the exception tree
    local_chat.py    LocalChatEngine: the ChatEngine with draft and target on this device (no network)

The draft drafts through the core's :class:`~drafts.neural.drafter.NeuralDrafter` (chains grown
on demand by :class:`~drafts.neural.chain.IncrementalChain`, ``--confidence`` chains, EAGLE-2
trees): the same routine as ``moa-bench`` and the local engine.

A chat UI needs only what is exported here: build a ClientDraft (or a Draftless client) and an
EngineConfig, drive a RemoteChatEngine (see its module for an example), and render its events.
RemoteEngine (async) and EngineThread (sync) stream from prompt tokens (the benchmark's way).
"""

from app.engine.chat import ChatEngine, EngineInfo, Message
from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig, LinkConfig
from app.engine.draftless import Draftless
from app.engine.errors import EngineError, VerifierRefusedError, VerifierUnavailableError
from app.engine.events import (
    DraftRejected,
    EngineEvent,
    Finished,
    GenerationStats,
    LinkChanged,
    LinkLost,
    LinkRestored,
    LinkState,
    OfflineBudgetReached,
    Reconnecting,
    Repaired,
    Shown,
    StatsUpdated,
    TokenGenerated,
)
from app.engine.local_chat import LocalChatEngine
from app.engine.remote import RemoteEngine
from app.engine.remote_chat import RemoteChatEngine
from app.engine.sync import EngineThread
from app.engine.text import Detokenizer, Piece

__all__ = [
    "ChatEngine",
    "ClientDraft",
    "Detokenizer",
    "DraftRejected",
    "Draftless",
    "EngineConfig",
    "EngineError",
    "EngineEvent",
    "EngineInfo",
    "EngineThread",
    "Finished",
    "GenerationStats",
    "LinkChanged",
    "LinkConfig",
    "LinkLost",
    "LinkRestored",
    "LinkState",
    "LocalChatEngine",
    "Message",
    "OfflineBudgetReached",
    "Piece",
    "Reconnecting",
    "RemoteChatEngine",
    "RemoteEngine",
    "Repaired",
    "Shown",
    "StatsUpdated",
    "TokenGenerated",
    "VerifierRefusedError",
    "VerifierUnavailableError",
]
