"""build_engine and what it checks before loading anything."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.engine.chat import EngineInfo
from app.engine.errors import EngineError
from app.engine.factory import Relabelled, build_engine, offline_model
from app.engine.local_chat import LocalChatEngine
from app.engine.remote_chat import RemoteChatEngine
from app.settings import Settings
from drafts.locations import smollm2_gguf


def test_the_offline_model(tmp_path: Path) -> None:
    assert offline_model(Settings()) == smollm2_gguf()
    assert offline_model(Settings(target="gemma3-270m")) is None  # the bundled GGUF is SmolLM2's
    assert offline_model(Settings(offline_model="none")) is None
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert offline_model(Settings(offline_model=str(gguf))) == gguf
    with pytest.raises(EngineError, match="does not exist"):
        offline_model(Settings(offline_model=str(tmp_path / "missing.gguf")))


def test_local_mode_builds_the_local_engine_without_loading_yet() -> None:
    messages: list[str] = []
    engine, info = build_engine(Settings(mode="local", draft="eagle", device="cpu"), messages.append)
    assert isinstance(engine, LocalChatEngine)
    assert (info.mode, info.draft, info.verifier) == ("local", "eagle", "this device")
    assert engine.runner is None  # the models load in open()
    assert messages


def test_the_local_target_packs_where_it_can_unless_the_settings_ask_for_dense_layers() -> None:
    packed, _ = build_engine(Settings(mode="local", device="cpu"))
    dense, _ = build_engine(Settings(mode="local", device="cpu", target_linear="dense"))
    assert isinstance(packed, LocalChatEngine) and isinstance(dense, LocalChatEngine)
    assert (packed.config.linear, dense.config.linear) == ("auto", "dense")  # auto: packed on a CPU in float32


def test_remote_mode_without_a_server_says_how_to_get_one() -> None:
    with pytest.raises(EngineError, match="needs a verifier: pass --server"):
        build_engine(Settings(mode="remote"))


def test_a_missing_token_file_is_named(tmp_path: Path) -> None:
    settings = Settings(mode="remote", server="ws://127.0.0.1:1", token_file=str(tmp_path / "token"))
    with pytest.raises(EngineError, match="--token-file .*token"):
        build_engine(settings)


@pytest.mark.integration  # loads SmolLM2's embeddings and tokenizer, and the draft
def test_stream_from_the_settings_reaches_the_engine_config_and_its_description() -> None:
    base = Settings(mode="remote", server="ws://127.0.0.1:1", offline_model="none", device="cpu", draft="eagle")
    streaming, info = build_engine(base.replace(stream=True))
    rounds, plain = build_engine(base)
    draftless, api = build_engine(base.replace(stream=True, draft="none"))  # no draft: the verifier streams alone
    assert isinstance(streaming, RemoteChatEngine) and streaming.config.stream and info.stream
    assert isinstance(rounds, RemoteChatEngine) and not rounds.config.stream and not plain.stream
    assert isinstance(draftless, RemoteChatEngine) and not draftless.config.stream and not api.stream
    _, shown = build_engine(base.replace(mode="demo", stream=True), verifier_url="ws://127.0.0.1:2")
    assert (shown.mode, shown.stream) == ("demo", True)  # Relabelled keeps the stream flag


class Recorder:
    """A minimal ChatEngine that records calls (what Relabelled passes through)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def describe(self) -> EngineInfo:
        return EngineInfo("remote", "moa", "SmolLM2", "cpu", "ws://127.0.0.1:1")

    def subscribe(self, callback) -> None:
        self.calls.append("subscribe")

    async def open(self) -> None:
        self.calls.append("open")

    async def close(self) -> None:
        self.calls.append("close")

    async def stream(self, messages, decode):
        self.calls.append("stream")
        yield "event"

    async def cancel(self) -> None:
        self.calls.append("cancel")


def test_relabelled_changes_only_the_mode() -> None:
    inner = Recorder()
    engine = Relabelled(inner, "demo")
    assert engine.describe() == EngineInfo("demo", "moa", "SmolLM2", "cpu", "ws://127.0.0.1:1")

    async def drive() -> list[object]:
        engine.subscribe(print)
        await engine.open()
        events = [event async for event in engine.stream([], None)]  # type: ignore[arg-type]
        await engine.cancel()
        await engine.close()
        return events

    assert asyncio.run(drive()) == ["event"]
    assert inner.calls == ["subscribe", "open", "stream", "cancel", "close"]
