"""build_engine and what it checks before loading anything."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from app.engine.chat import EngineInfo
from app.engine.errors import EngineError
from app.engine.factory import (
    Relabelled,
    build_engine,
    offline_model,
    resolve_draft,
    target_name,
)
from app.engine.local_chat import LocalChatEngine
from app.settings import Settings
from drafts.locations import shipped_checkpoint, smollm2_gguf


def checkpoint(tmp_path: Path, kind: str = "moa", trained_for: str = "SmolLM2-135M-Instruct") -> Path:
    path = tmp_path / f"{kind}-draft"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"format": 1, "kind": kind, "target": {"name": trained_for}}))
    return path


@pytest.mark.parametrize("kind", ["moa", "eagle", "independent"])
def test_a_kind_resolves_to_the_checkpoint_shipped_for_the_target(kind: str) -> None:
    choice = resolve_draft(kind, "smollm2")
    assert choice.kind == kind and choice.checkpoint == shipped_checkpoint("SmolLM2-135M-Instruct", kind)
    assert (choice.server_half is not None) == (kind == "moa")  # only MoA runs a part on the verifier


def test_none_is_no_draft() -> None:
    choice = resolve_draft("none", "smollm2")
    assert choice.kind is None and choice.checkpoint is None and choice.server_half is None


def test_a_checkpoint_directory_gives_its_kind(tmp_path: Path) -> None:
    path = checkpoint(tmp_path, "eagle")
    assert resolve_draft(str(path), "smollm2").kind == "eagle"


def test_a_directory_that_is_no_checkpoint_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="not a draft checkpoint .* pass moa, eagle, independent, none"):
        resolve_draft(str(tmp_path), "smollm2")


def test_a_draft_for_another_target_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = checkpoint(tmp_path, trained_for="Qwen2.5-0.5B")
    with pytest.raises(EngineError, match="trained for Qwen2.5-0.5B, but the target is SmolLM2.*matching --target"):
        resolve_draft(str(path), "smollm2")


def test_no_shipped_draft_for_another_target() -> None:
    with pytest.raises(EngineError, match="no moa draft is shipped for target '/m/q.gguf'.*moa-train"):
        resolve_draft("moa", "/m/q.gguf")


def test_target_names() -> None:
    assert target_name("smollm2") == "SmolLM2-135M-Instruct"
    assert target_name("/models/Qwen-0.5B.gguf") == "Qwen-0.5B"
    assert target_name("/models/my-target/") == "my-target"


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


def test_remote_mode_without_a_server_says_how_to_get_one() -> None:
    with pytest.raises(EngineError, match="needs a verifier: pass --server"):
        build_engine(Settings(mode="remote"))


def test_a_missing_token_file_is_named(tmp_path: Path) -> None:
    settings = Settings(mode="remote", server="ws://127.0.0.1:1", token_file=str(tmp_path / "token"))
    with pytest.raises(EngineError, match="--token-file .*token"):
        build_engine(settings)


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
