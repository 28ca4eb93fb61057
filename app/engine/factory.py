"""build_engine: the ChatEngine the settings ask for, with every check that can fail early done first.

    engine, info = build_engine(settings, on_progress=print, verifier_url=demo.url)

    mode     engine                               draft                   target runs
    demo     RemoteChatEngine (shown as "demo")   --draft (default moa)   the demo's verifier process
    remote   RemoteChatEngine                     --draft                 moa-server at --server
    api      RemoteChatEngine + Draftless         none                    --server, or the demo's verifier
    local    LocalChatEngine                      --draft, or none        this process

``--draft`` is ``moa``, ``eagle``, ``independent`` (the checkpoint shipped for the target), a
checkpoint directory, or ``none``. Models load here (remote: the draft and the target's
embeddings and tokenizer) or in ``open()`` (local); a missing model, a checkpoint that is not
one, or a draft trained for another target is an :class:`EngineError` saying what to pass instead.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engine.chat import ChatEngine, EngineInfo, Message
from app.engine.errors import EngineError
from app.engine.events import EngineEvent
from app.settings import Settings
from drafts.decoding.config import DecodeConfig
from drafts.errors import MoaError
from drafts.locations import shipped_checkpoint, smollm2_gguf

Progress = Callable[[str], None]
SHIPPED_KINDS = ("moa", "eagle", "independent")
TARGET_NAMES = {"smollm2": "SmolLM2-135M-Instruct", "gemma3-270m": "gemma-3-270m"}  # aliases -> trained-for names


class EngineSetupError(EngineError):
    """The settings name a model, a draft or a file that cannot be used; the message says what to pass."""


@dataclass(frozen=True)
class DraftChoice:
    """What ``--draft`` resolved to."""

    kind: str | None  # "moa", "eagle", "independent", or None for no draft
    checkpoint: Path | None  # its directory (None without a draft)

    @property
    def server_half(self) -> Path | None:
        """The checkpoint whose part the verifier runs (MoA's memory), if any."""
        return self.checkpoint if self.kind == "moa" else None


def resolve_draft(spec: str, target: str) -> DraftChoice:
    """``--draft`` as a kind and a checkpoint directory, checked against ``--target`` without loading."""
    if spec == "none":
        return DraftChoice(None, None)
    if spec in SHIPPED_KINDS:
        checkpoint = shipped_checkpoint(target_name(target), spec)
        if not (checkpoint / "config.json").is_file():
            raise EngineSetupError(
                f"no {spec} draft is shipped for target {target!r}; train one with "
                f"`moa-train --draft {spec} --target {target} --out DIR` and pass --draft DIR, or use --draft none"
            )
        return DraftChoice(spec, checkpoint)
    return DraftChoice(_checkpoint_kind(Path(spec).expanduser(), target), Path(spec).expanduser())


def target_name(target: str) -> str:
    """The name a target's drafts record (``TargetFingerprint.name``) for an alias, a .gguf or a directory."""
    if target in TARGET_NAMES:
        return TARGET_NAMES[target]
    return Path(target).stem if target.endswith(".gguf") else Path(target).name


def _checkpoint_kind(path: Path, target: str) -> str:
    config = path / "config.json"
    if not config.is_file():
        raise EngineSetupError(
            f"--draft {path}: not a draft checkpoint (no config.json there); pass moa, eagle, independent, none "
            "or a directory written by moa-train"
        )
    try:
        meta: dict[str, Any] = json.loads(config.read_text())
        kind, trained_for = str(meta["kind"]), str(meta["target"]["name"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EngineSetupError(f"--draft {path}: {config} is unreadable or not a draft's ({exc}); retrain it") from exc
    if kind not in SHIPPED_KINDS:
        raise EngineSetupError(f"--draft {path}: a {kind!r} checkpoint; moa-chat runs {', '.join(SHIPPED_KINDS)}")
    if trained_for != target_name(target):
        raise EngineSetupError(
            f"--draft {path} was trained for {trained_for}, but the target is {target_name(target)} "
            f"(--target {target}); pass the matching --target, or a draft trained for this one"
        )
    return kind


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
    config = LocalConfig(target=settings.target, draft=draft.kind, checkpoint=draft.checkpoint, device=settings.device)
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
    config = EngineConfig(
        LinkConfig(url, token=token),
        offline_model=offline_model(settings) if settings.mode != "api" else None,
        offline_budget=settings.offline_budget,
        device=settings.device,
    )
    draft = resolve_draft("none" if settings.mode == "api" else settings.draft, settings.target)
    if draft.checkpoint is None:
        progress(f"loading the tokenizer of {settings.target} (no draft: the verifier decodes)")
        where = resolve_device("cpu")
        client: Any = Draftless.of(TargetRunner(load_target(settings.target, where, default_dtype(where))))
    else:
        progress(f"loading the {draft.kind} draft ({draft.checkpoint.name}) on {settings.device}")
        client = ClientDraft.load(draft.checkpoint, settings.target, settings.device)
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
