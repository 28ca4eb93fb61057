"""The remote engine: draft here, verify on a moa-server, keep writing when the link drops.

    config.py        EngineConfig, LinkConfig (frozen, validated once)
    client_draft.py  ClientDraft: the draft and what it knows of its target
    draftless.py     Draftless: a client with no draft (the server decodes: "API streaming")
    events.py        what a UI consumes: TokenGenerated ... Finished, and Shown (their fold)
    remote.py        RemoteEngine: the async API (stream, generate)
    sync.py          EngineThread: the same for synchronous callers
    generation.py    one generation: prefill, rounds drafting ahead, offline spells, repair
    api_generation.py  one generation decoded by the server alone, streamed
    chain.py         DraftChain: an incremental draft chain that outlives a verification
    pacing.py        Pacer: the chain length for the measured round trip and acceptance
    transcript.py    Transcript: confirmed and offline output, stop rules, token events
    offline.py       what writes while offline: the draft alone, or a GGUF model
    session.py       VerifierSession: (re)connect, resume or replay, traffic
    link.py          Link: one WebSocket connection around the sans-I/O ClientProtocol
    errors.py        the engine's branch of the exception tree
    local_chat.py    LocalChatEngine: the ChatEngine with draft and target on this device (no network)

A UI needs only what is exported here: build a ClientDraft and an EngineConfig, stream a
generation from RemoteEngine (async) or EngineThread (sync), and render its events.
"""

from app.engine.client_draft import ClientDraft
from app.engine.config import EngineConfig, LinkConfig
from app.engine.draftless import Draftless
from app.engine.errors import EngineError, VerifierRefusedError, VerifierUnavailableError
from app.engine.events import (
    DraftRejected,
    EngineEvent,
    Finished,
    GenerationStats,
    LinkLost,
    LinkRestored,
    Reconnecting,
    Repaired,
    Shown,
    TokenGenerated,
)
from app.engine.local_chat import LocalChatEngine
from app.engine.remote import RemoteEngine
from app.engine.sync import EngineThread

__all__ = [
    "ClientDraft",
    "DraftRejected",
    "Draftless",
    "EngineConfig",
    "EngineError",
    "EngineEvent",
    "EngineThread",
    "Finished",
    "GenerationStats",
    "LinkConfig",
    "LinkLost",
    "LocalChatEngine",
    "LinkRestored",
    "Reconnecting",
    "RemoteEngine",
    "Repaired",
    "Shown",
    "TokenGenerated",
    "VerifierRefusedError",
    "VerifierUnavailableError",
]
