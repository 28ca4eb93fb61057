"""A soak client: websockets + the sans-I/O ClientProtocol, oracle drafts, resume after a cut.

One :class:`SoakClient` is one connection; a :class:`Conversation` is one prompt's checked
generation, which survives its connection: after a cut it reconnects, resumes (or replays) and
goes on, so its output can be compared with the reference at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from drafts.protocol import (
    PROTOCOL_VERSION,
    Answered,
    ClientProtocol,
    Error,
    Hello,
    Limits,
    Needs,
    Prefill,
    Rewind,
    Streamed,
    Verified,
    Verify,
    Welcome,
)
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree

GREEDY = SamplingConfig()
REPLY_TIMEOUT_S = 120.0  # a reply later than this is a hang


class WrongAnswer(AssertionError):
    """The server's answer differs from the target's own greedy output."""


class SoakClient:
    """One connection, opened with Hello; requests answered one at a time."""

    def __init__(self, ws: ClientConnection, target: dict[str, Any]) -> None:
        self.ws = ws
        self.target = target
        self.protocol = ClientProtocol(Limits(max_frame_bytes=2**28))
        self.welcome: Welcome | None = None

    @classmethod
    async def open(
        cls, url: str, target: dict[str, Any], resume: str | None = None, length: int | None = None
    ) -> SoakClient:
        ws = await connect(url, max_size=None, compression=None, open_timeout=30)
        client = cls(ws, target)
        hello = Hello(PROTOCOL_VERSION, "soak/1", target, "oracle", Needs(), resume, length)
        await ws.send(client.protocol.send(hello))
        while client.welcome is None:
            for event in client.protocol.receive(await asyncio.wait_for(ws.recv(decode=False), REPLY_TIMEOUT_S)):
                if isinstance(event, Welcome):
                    client.welcome = event
                elif isinstance(event, Error) and event.fatal:
                    await ws.close()
                    raise ConnectionRefusedError(f"{event.code.value}: {event.message}")
        return client

    async def ask(self, request: Any, parts: list[Any] | None = None) -> Any:
        await self.ws.send(self.protocol.send(request))
        while True:
            frame = await asyncio.wait_for(self.ws.recv(decode=False), REPLY_TIMEOUT_S)
            for event in self.protocol.receive(frame):
                if isinstance(event, Streamed) and parts is not None:
                    parts.append(event.part)
                elif isinstance(event, Answered) and event.request.request_id == request.request_id:
                    return event.reply
                elif isinstance(event, Error) and event.fatal:
                    raise ConnectionRefusedError(f"{event.code.value}: {event.message}")

    def new_id(self) -> int:
        return self.protocol.new_request_id()

    async def close(self) -> None:
        # AttributeError: websockets aborts a transport the server already dropped (after a 1009 close)
        with contextlib.suppress(ConnectionClosed, OSError, AttributeError, TimeoutError):
            await asyncio.wait_for(self.ws.close(), 15)


@dataclass
class Conversation:
    """One prompt's generation, checked round by round against ``reference`` (the target's greedy output)."""

    prompt: list[int]
    reference: list[int]
    vocab: int
    rng: random.Random
    out: list[int] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    resumes: int = 0
    replays: int = 0

    @property
    def context(self) -> list[int]:
        return self.prompt + self.out

    @property
    def done(self) -> bool:
        return len(self.out) >= len(self.reference) - 1  # the next token must be known to check it

    async def start(self, client: SoakClient) -> None:
        reply = await client.ask(Prefill(client.new_id(), torch.tensor(self.context[:-1], dtype=torch.int64)))
        if isinstance(reply, Error):
            raise WrongAnswer(f"prefill refused: {reply.code.value} {reply.message}")

    async def round(self, client: SoakClient) -> None:
        """One oracle round: draft up to 6 reference tokens (one corrupted at random), check the verdict."""
        room = len(self.reference) - 1 - len(self.out)
        ahead = self.reference[len(self.out) : len(self.out) + self.rng.randint(0, min(6, room))]
        draft, expect = list(ahead), len(ahead)
        if draft and self.rng.random() < 0.4:
            expect = self.rng.randrange(len(draft))
            draft[expect] = (draft[expect] + 1 + self.rng.randrange(self.vocab - 1)) % self.vocab
        request = Verify.of(client.new_id(), self.context[-1], DraftTree.chain(draft), GREEDY)
        started = time.perf_counter()
        reply = await client.ask(request)
        self.latencies_ms.append((time.perf_counter() - started) * 1e3)
        if not isinstance(reply, Verified):
            raise WrongAnswer(f"verify refused: {getattr(reply, 'code', reply)} {getattr(reply, 'message', '')}")
        want_next = self.reference[len(self.out) + expect]
        if reply.acceptance.path != tuple(range(1, expect + 1)) or reply.next_token != want_next:
            raise WrongAnswer(
                f"at token {len(self.out)}: accepted {reply.acceptance.path} then {reply.next_token}, "
                f"the target's greedy output says {expect} accepted then {want_next}"
            )
        if reply.committed != len(self.context) + expect:
            raise WrongAnswer(f"committed {reply.committed}, expected {len(self.context) + expect}")
        self.out += draft[:expect] + [reply.next_token]

    async def run(self, client: SoakClient, rounds: int | None = None) -> None:
        n = 0
        while not self.done and (rounds is None or n < rounds):
            await self.round(client)
            n += 1

    async def rewind_to_start(self, client: SoakClient) -> None:
        """Back to the prompt (Rewind), as a chat regenerating its answer does."""
        reply = await client.ask(Rewind(client.new_id(), len(self.prompt) - 1))
        if isinstance(reply, Error) or reply.committed != len(self.prompt) - 1:
            raise WrongAnswer(f"rewind answered {reply}")
        self.out = []

    async def survive(self, url: str, target: dict[str, Any], deadline_s: float = 300.0) -> SoakClient:
        """Run to the end across cuts: reconnect, resume (or replay), continue; the last connection."""
        client: SoakClient | None = None
        session: str | None = None
        stop_at = time.monotonic() + deadline_s
        while time.monotonic() < stop_at:
            try:
                if client is None:
                    client = await SoakClient.open(url, target, session, len(self.context) - 1 if session else None)
                    welcome = client.welcome
                    assert welcome is not None
                    if session is not None and welcome.resumed:
                        self.resumes += 1
                    else:
                        self.replays += int(session is not None)
                        await self.start(client)
                    session = welcome.session_id
                await self.run(client)
                return client
            except (ConnectionClosed, OSError, InvalidHandshake, TimeoutError):
                client = None
                await asyncio.sleep(0.05)
        raise TimeoutError(f"the conversation did not finish within {deadline_s:g} s of cuts")
