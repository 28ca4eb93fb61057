"""moa-server as a process with the real SmolLM2: a remote greedy chat answer equals the target's, SIGTERM is clean."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.protocol import Needs, Prefilled, Welcome
from drafts.target.loading import load_target
from drafts.target.runner import TargetRunner
from tests.server_stub.remote_client import Conversation, RemoteClient

pytestmark = pytest.mark.integration

CHAT = [{"role": "user", "content": "List the days of the week, one per line."}]
NEW_TOKENS = 32


@pytest.fixture(scope="module")
def runner() -> TargetRunner:
    """The reference target, loaded as moa-server loads it (packed on a CPU in float32 where oneDNN is there):
    greedy outputs are compared on one kind of Linear layers, never packed against dense."""
    return TargetRunner(load_target(None, torch.device("cpu"), torch.float32, linear="auto"))


class ServerProcess:
    """moa-server in a subprocess; its JSON log lines are drained in a thread so the pipe never fills."""

    def __init__(self, process: subprocess.Popen[str], url: str, linear: str | None) -> None:
        self.process, self.url, self.linear = process, url, linear
        self.events: list[str] = []
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if line.startswith("{"):
                self.events.append(json.loads(line)["event"])

    def wait(self, timeout: float) -> int:
        code = self.process.wait(timeout)
        self._drain.join(timeout)
        return code


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    command = [sys.executable, "-m", "server_stub", "--port", "0", "--device", "cpu", "--max-tree", "32"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    url = linear = None
    for line in process.stderr:  # JSON lines; the target event names its Linear layers, the start event the URL
        record = json.loads(line) if line.startswith("{") else {}
        linear = record.get("linear", linear)
        if record.get("event") == "server.start":
            url = record["url"]
            break
    assert url is not None, "moa-server did not start"
    yield ServerProcess(process, url, linear)
    if process.poll() is None:
        process.kill()


def test_a_remote_greedy_answer_equals_the_targets_own(runner: TargetRunner, server: ServerProcess) -> None:
    assert server.linear == runner.linear == ("packed" if torch.backends.mkldnn.is_available() else "dense")
    prompt = runner.format_chat(CHAT)
    expected = generate_autoregressive(runner, prompt, DecodeConfig(max_new_tokens=NEW_TOKENS)).tokens

    async def scenario() -> tuple[Welcome, Prefilled, list[int]]:
        client = await RemoteClient.connect(server.url)
        welcome = await client.hello(runner.fingerprint.to_dict(), Needs(all_layer_kv=True))
        assert isinstance(welcome, Welcome), welcome
        conversation = Conversation(prompt)
        prefilled = await conversation.start(client)
        out = await conversation.run(client, NEW_TOKENS)
        await client.close()
        return welcome, prefilled, out

    welcome, prefilled, out = asyncio.run(asyncio.wait_for(scenario(), timeout=300))

    assert welcome.capabilities.max_tree_nodes == 32 and welcome.capabilities.max_context == 8192
    assert prefilled.activations["kv"].shape == (len(prompt) - 1, 30, 384)  # 30 layers x 3 KV heads x (64 + 64)
    assert out[: len(expected)] == expected


def test_sigterm_shuts_the_server_down_cleanly(server: ServerProcess) -> None:
    server.process.send_signal(signal.SIGTERM)

    assert server.wait(timeout=60) == 0
    assert "server.signal" in server.events and server.events[-1] == "server.stop"
    assert "session.open" in server.events
