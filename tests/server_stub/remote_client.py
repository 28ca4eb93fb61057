"""A minimal remote client for the server tests: websockets + :class:`ClientProtocol`, prompt-lookup drafts.

It speaks the protocol the way ``app/`` will: prefill every prompt token but the newest, then
verify rounds whose root is the newest token; the server's Verified says what was accepted.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from websockets.asyncio.client import ClientConnection, connect

from drafts.drafters.base import Drafter, DraftShape
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.protocol import (
    PROTOCOL_VERSION,
    Answered,
    Cancel,
    ClientProtocol,
    Error,
    FrameRejected,
    Generate,
    Generated,
    Hello,
    Limits,
    Message,
    Needs,
    Prefill,
    Prefilled,
    Propose,
    Rewind,
    Rewound,
    Streamed,
    Verified,
    Verify,
    Welcome,
    decode,
)
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree
from server_stub.auth import bearer

GREEDY = SamplingConfig()
NOTHING = Needs()
Reply = Prefilled | Verified | Rewound | Generated | Error


class RemoteClient:
    """One connection to a verifier."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.protocol = ClientProtocol(Limits(max_frame_bytes=2**28))
        self.notices: list[Error] = []  # non-fatal session-level Errors (e.g. SESSION_UNKNOWN before Welcome)

    @classmethod
    async def connect(cls, url: str, token: str | None = None, tls: ssl.SSLContext | None = None) -> RemoteClient:
        headers = {"Authorization": bearer(token)} if token else None
        ws = await connect(url, additional_headers=headers, max_size=None, compression=None, ssl=tls)
        return cls(ws)

    async def hello(
        self,
        target: dict[str, Any],
        needs: Needs = NOTHING,
        draft_id: str = "lookup",
        resume_session: str | None = None,
        resume_length: int | None = None,
    ) -> Welcome | Error:
        hello = Hello(PROTOCOL_VERSION, "tests/0", target, draft_id, needs, resume_session, resume_length)
        await self.ws.send(self.protocol.send(hello))
        while True:
            for event in await self._events():
                if isinstance(event, Welcome) or (isinstance(event, Error) and event.fatal):
                    return event
                if isinstance(event, Error):
                    self.notices.append(event)

    async def ask(self, request: Prefill | Verify | Rewind | Generate, parts: list[Generated] | None = None) -> Reply:
        """Send ``request`` and wait for its reply (or a session-level Error); a Generate's parts go to ``parts``."""
        await self.send(request)
        return await self.answer(request, parts)

    async def send(self, message: Prefill | Verify | Rewind | Generate | Propose | Cancel) -> None:
        """Send a message without waiting (a request's reply is read by ``answer``)."""
        await self.ws.send(self.protocol.send(message))

    async def answer(
        self,
        request: Prefill | Verify | Rewind | Generate,
        parts: list[Generated] | None = None,
        on_part: Callable[[Generated], Awaitable[None]] | None = None,
    ) -> Reply:
        """Wait for the reply to ``request`` (sent already); its streamed parts go to ``parts`` and ``on_part``."""
        while True:
            for event in await self._events():
                if isinstance(event, Streamed) and parts is not None:
                    parts.append(event.part)
                if isinstance(event, Streamed) and on_part is not None:
                    await on_part(event.part)
                if isinstance(event, Answered) and event.request.request_id == request.request_id:
                    return event.reply
                if isinstance(event, Error):
                    return event

    async def prefill(self, tokens: list[int]) -> Reply:
        return await self.ask(Prefill(self.protocol.new_request_id(), torch.tensor(tokens, dtype=torch.int64)))

    async def verify(self, root: int, tree: DraftTree, sampling: SamplingConfig = GREEDY) -> Reply:
        return await self.ask(Verify.of(self.protocol.new_request_id(), root, tree, sampling))

    async def generate(
        self, root: int, max_new_tokens: int, stops: tuple[int, ...] = (), sampling: SamplingConfig = GREEDY
    ) -> tuple[list[Generated], Reply]:
        """Plain decoding on the server: (the streamed parts, the reply)."""
        parts: list[Generated] = []
        stop_tokens = torch.tensor(stops, dtype=torch.int64)
        request = Generate(self.protocol.new_request_id(), root, max_new_tokens, stop_tokens, sampling)
        return parts, await self.ask(request, parts)

    async def rewind(self, length: int) -> Reply:
        return await self.ask(Rewind(self.protocol.new_request_id(), length))

    async def raw(self, data: bytes | str) -> Message:
        """Send bytes outside the protocol; the server's answer, decoded directly."""
        await self.ws.send(data)
        return decode(await self.ws.recv(decode=False), Limits(max_frame_bytes=2**28))

    async def close(self) -> None:
        await self.ws.close()

    async def _events(self) -> list[Any]:
        events = self.protocol.receive(await self.ws.recv(decode=False))
        assert not any(isinstance(e, FrameRejected) for e in events), events
        return events


@dataclass
class Conversation:
    """A generation as the client holds it: the prompt, the tokens so far, and its drafter."""

    prompt: list[int]
    out: list[int] = field(default_factory=list)
    drafter: Drafter = field(default_factory=PromptLookupDrafter)
    sampling: SamplingConfig = GREEDY

    @property
    def context(self) -> list[int]:
        return self.prompt + self.out

    @property
    def committed(self) -> int:
        """What the server has committed: everything but the newest token (the next root)."""
        return len(self.context) - 1

    async def start(self, client: RemoteClient) -> Prefilled:
        """Prefill the session with everything but the newest token (a new session, or a replay)."""
        reply = await client.prefill(self.context[:-1])
        assert isinstance(reply, Prefilled), reply
        return reply

    async def round(self, client: RemoteClient) -> Verified:
        tree = self.drafter.propose(self.context, DraftShape(gamma=4), self.sampling, None)
        reply = await client.verify(self.context[-1], tree, self.sampling)
        assert isinstance(reply, Verified), reply
        self.out += [tree.tokens[i - 1] for i in reply.acceptance.path] + [reply.next_token]
        assert reply.committed == self.committed
        return reply

    async def run(self, client: RemoteClient, new_tokens: int) -> list[int]:
        while len(self.out) < new_tokens:
            await self.round(client)
        return self.out[:new_tokens]
