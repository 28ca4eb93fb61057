"""build_engine: the ChatEngine the settings ask for, with every check that can fail early done first.

    engine, info = build_engine(settings, on_progress=print, verifier_url=demo.url)

    mode     engine                               draft                   target runs
    demo     RemoteChatEngine (shown as "demo")   --draft (default moa)   the demo's verifier process
    remote   RemoteChatEngine                     --draft                 moa-server at --server
             (with --stream either streams speculatively: EngineConfig.stream; the status bar says "demo stream")
    api      RemoteChatEngine + Draftless         none                    --server, or the demo's verifier
    local    LocalChatEngine                      --draft, or none        this process

``--draft`` is ``moa``, ``eagle``, ``independent`` (the checkpoint shipped for the target), a
checkpoint directory, or ``none`` (:mod:`app.settings.draft`: a checkpoint that is not one, or a
draft trained for another target, is a ``DraftError`` before anything loads). Models load here
(remote: the draft and the target's embeddings and tokenizer) or in ``open()`` (local); a model
or checkpoint that will not load is an :class:`EngineSetupError` saying what to pass instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from app.engine.chat import ChatEngine, EngineInfo, Message
from app.engine.errors import EngineError
from app.engine.events import EngineEvent
from app.settings import Settings
from app.settings.draft import DraftChoice, resolve_draft, target_name
from drafts.decoding.config import DecodeConfig
from drafts.errors import MoaError
from drafts.locations import smollm2_gguf

Progress = Callable[[str], None]


class EngineSetupError(EngineError):
    """The settings name a model or a file that cannot be used; the message says what to pass."""


def offline_model(settings: Settings) -> Path | None:
    """The GGUF that writes while the link is down: the bundled SmolLM2 (for that target only), a file, or None."""
    if settings.offline_model == "none":
        return None
    if settings.offline_model == "bundled":
        return smollm2_gguf() if settings.target == "smollm2" else None
    path = Path(settings.offline_model).expanduser()
    if not path.is_file():
        raise EngineSetupError(f"--offline-model {path} does not exist; pass a .gguf file, bundled or none")
    return path


def build_engine(
    settings: Settings, on_progress: Progress | None = None, verifier_url: str | None = None
) -> tuple[ChatEngine, EngineInfo]:
    """The engine for ``settings`` (``verifier_url``: the demo's, overriding ``settings.server``)."""
    progress = on_progress or (lambda message: None)
    try:
        if settings.mode == "local":
            engine: ChatEngine = _local_engine(settings, progress)
        else:
            engine = _remote_engine(settings, progress, verifier_url or settings.server)
    except EngineError:
        raise
    except MoaError as exc:  # a model or checkpoint that would not load: the same words, as an engine error
        raise EngineSetupError(str(exc)) from exc
    return engine, engine.describe()


def _local_engine(settings: Settings, progress: Progress) -> ChatEngine:
    from app.engine.local_chat import LocalChatEngine
    from app.engine.local_models import LocalConfig

    draft = resolve_draft(settings.draft, settings.target)
    progress(f"the target and the draft load on {settings.device} when the chat opens")
    config = LocalConfig(
        target=settings.target,
        draft=draft.kind,
        checkpoint=draft.checkpoint,
        device=settings.device,
        int8_on_cpu=settings.draft_quantize == "int8",
        linear=settings.target_linear,
    )
    return LocalChatEngine(config)


def _remote_engine(settings: Settings, progress: Progress, url: str) -> ChatEngine:
    from app.engine.client_draft import ClientDraft
    from app.engine.config import EngineConfig, LinkConfig
    from app.engine.draftless import Draftless
    from app.engine.remote_chat import RemoteChatEngine
    from drafts.target.device import default_dtype, resolve_device
    from drafts.target.loading import load_target
    from drafts.target.runner import TargetRunner

    if not url:
        raise EngineSetupError(f"{settings.mode} mode needs a verifier: pass --server ws://HOST:PORT, or use --demo")
    token = _read_token(settings.token_path)
    draft = resolve_draft("none" if settings.mode == "api" else settings.draft, settings.target)
    config = EngineConfig(
        LinkConfig(url, token=token),
        offline_model=offline_model(settings) if settings.mode != "api" else None,
        offline_budget=settings.offline_budget,
        device=settings.device,
        stream=settings.stream and draft.checkpoint is not None,  # without a draft the verifier streams alone
    )
    if draft.checkpoint is None:
        progress(f"loading the tokenizer of {settings.target} (no draft: the verifier decodes)")
        where = resolve_device("cpu")
        client: Any = Draftless.of(TargetRunner(load_target(settings.target, where, default_dtype(where))))
    else:
        progress(f"loading the {draft.kind} draft ({draft.checkpoint.name}) on {settings.device}")
        client = ClientDraft.load(draft.checkpoint, settings.target, settings.device, settings.draft_quantize == "int8")
    engine = RemoteChatEngine(config, client)
    return Relabelled(engine, "demo") if settings.mode == "demo" else engine


def _read_token(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise EngineSetupError(f"--token-file {path}: {exc}; pass the file holding the server's token") from exc
    if not token:
        raise EngineSetupError(f"--token-file {path} is empty; it must hold the server's bearer token")
    return token


class Relabelled:
    """An engine whose status-bar mode reads differently (the demo is a remote engine on loopback)."""

    def __init__(self, engine: ChatEngine, mode: str) -> None:
        self.engine = engine
        self.mode = mode

    def describe(self) -> EngineInfo:
        return dataclasses.replace(self.engine.describe(), mode=self.mode)

    def subscribe(self, callback: Callable[[EngineEvent], None]) -> None:
        self.engine.subscribe(callback)

    async def open(self) -> None:
        await self.engine.open()

    async def close(self) -> None:
        await self.engine.close()

    def stream(self, messages: Sequence[Message], decode: DecodeConfig) -> AsyncIterator[EngineEvent]:
        return self.engine.stream(messages, decode)

    async def cancel(self) -> None:
        await self.engine.cancel()


__all__ = [
    "DraftChoice",
    "EngineSetupError",
    "Relabelled",
    "build_engine",
    "offline_model",
    "resolve_draft",
    "target_name",
]
