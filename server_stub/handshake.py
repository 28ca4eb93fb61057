"""A connection's first exchange: Hello -> target, draft and needs checked, session opened or resumed -> Welcome.

Or a fatal Error that says what to change (the connection then closes). A resume cuts the
session back to the length the client holds (replies lost with the old connection); a session
that cannot be resumed is answered with a non-fatal SESSION_UNKNOWN and a fresh session, and
the client replays its conversation.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from websockets.asyncio.server import ServerConnection

from drafts.errors import ErrorCode
from drafts.protocol import PROTOCOL_VERSION, Error, FrameRejected, Hello, ServerProtocol, Welcome
from server_stub.backend.base import MEMORY, BackendCapabilities, TargetBackend
from server_stub.errors import DraftUnsupportedError, ServerError, SessionUnknownError, TargetMismatchError
from server_stub.logs import log_event
from server_stub.services import Services
from server_stub.sessions import Owner, SessionRecord

log = logging.getLogger(__name__)


class Handshake:
    """Runs the handshake of one connection (``owner``); ``record`` is the session attached so far.

    ``record`` is set as soon as a session is attached, even if the handshake then fails (the
    Welcome could not be sent): the connection detaches it when it ends.
    """

    def __init__(
        self, ws: ServerConnection, protocol: ServerProtocol, services: Services, owner: Owner, client: str
    ) -> None:
        self.ws = ws
        self.protocol = protocol
        self.services = services
        self.owner = owner
        self.client = client  # the peer address sessions are counted by
        self.peer = str(ws.remote_address)
        self.record: SessionRecord | None = None

    async def run(self) -> bool:
        """True once the session is open (Welcome sent); False after a refusal."""
        try:
            frame = await asyncio.wait_for(self.ws.recv(), self.services.config.hello_timeout)
        except TimeoutError:
            self.services.rejections.log(log, "handshake.timeout", peer=self.peer)
            message = f"no Hello within {self.services.config.hello_timeout:g} s (the server's --hello-timeout)"
            await self.ws.send(self.protocol.send(Error(None, ErrorCode.UNEXPECTED_MESSAGE, message, fatal=True)))
            return False
        for event in self.protocol.receive(frame):
            if isinstance(event, FrameRejected):
                code = event.error.code.value
                self.services.rejections.log(log, "handshake.rejected", peer=self.peer, code=code)
                await self.ws.send(event.reply)
            elif isinstance(event, Hello):
                return await self._welcome(event)
        return False

    async def _welcome(self, hello: Hello) -> bool:
        caps = self.services.backend_caps
        try:
            check_target(caps, hello)
            check_draft(caps, hello)
            resumed, committed = await self._attach(hello)
        except ServerError as exc:
            self.services.rejections.log(log, "session.refused", peer=self.peer, code=exc.code.value, reason=str(exc))
            await self.ws.send(self.protocol.send(Error(None, exc.code, str(exc), fatal=True)))
            return False
        assert self.record is not None
        target, capabilities = caps.target.to_dict(), self.services.capabilities
        welcome = Welcome(PROTOCOL_VERSION, self.record.session_id, target, capabilities, resumed, committed)
        await self.ws.send(self.protocol.send(welcome))
        log_event(
            log,
            "session.open",
            session=self.record.session_id,
            peer=self.peer,
            resumed=resumed,
            committed=committed,
            client=hello.client,
            draft=hello.draft_id,
            sessions=len(self.services.registry),
        )
        return True

    async def _attach(self, hello: Hello) -> tuple[bool, int]:
        """(resumed, committed) for the session this connection now owns."""
        registry = self.services.registry
        if hello.resume_session is not None:
            record = registry.resume(hello.resume_session, hello.needs, self.owner)
            if record is not None:
                record.client = self.client
                self.record = record
                committed = await self._resume_length(record.session_id, hello.resume_length)
                if committed is not None:
                    return True, committed
                registry.expire(record.session_id)
                self.record = None
            notice = (
                f"session {hello.resume_session} cannot be resumed (it expired after {registry.grace:g} s, its state "
                "was evicted, or it was opened for another draft); a new session follows: replay the conversation"
            )
            await self.ws.send(self.protocol.send(Error(None, ErrorCode.SESSION_UNKNOWN, notice, fatal=False)))
        record = registry.new(hello.needs, self.owner, self.client)
        try:
            await self.services.worker.call(
                lambda backend: backend.open(record.session_id, hello.needs), record.session_id
            )
        except ServerError:
            registry.remove(record.session_id)
            raise
        self.record = record
        return False, 0

    async def _resume_length(self, session_id: str, client_length: int | None) -> int | None:
        """The resumed session's committed length, cut back to what the client holds; None if unusable."""

        def settle(backend: TargetBackend) -> int | None:
            committed = backend.committed(session_id)
            if client_length is None or client_length == committed:
                return committed
            if client_length < committed:  # replies lost with the connection: the client never saw those
                return backend.rewind(session_id, client_length)
            return None  # the client holds more than the server ever committed: start over

        try:
            committed, _ = await self.services.worker.call(settle, session_id)
        except SessionUnknownError:
            return None
        return committed


def check_target(caps: BackendCapabilities, hello: Hello) -> None:
    """Refuse a draft trained for another target (TargetMismatchError, naming both)."""
    ours = caps.target
    theirs = dict(hello.target)
    if theirs != ours.to_dict():
        raise TargetMismatchError(
            f"this server runs {_describe(ours.to_dict())}, but the client's draft was trained for "
            f"{_describe(theirs)}; connect to a server started with that target (moa-server --target ...), "
            f"or use a draft trained for {ours.name}"
        )


def check_draft(caps: BackendCapabilities, hello: Hello) -> None:
    """Refuse a draft that needs MoA memory this server cannot compute (DraftUnsupportedError)."""
    if hello.needs.compressed != MEMORY:
        return  # raw activations: any draft of this target can read them
    served = caps.memory_draft_id
    if served is None:
        raise DraftUnsupportedError(
            f"the client's draft {hello.draft_id} asks for MoA memory vectors, but this server loaded no MoA "
            "checkpoint; start moa-server with --draft-checkpoint DIR (the client's checkpoint), or have the "
            "client ask for the raw all-layer kv"
        )
    if served != hello.draft_id:
        raise DraftUnsupportedError(
            f"this server computes MoA memory for draft {served}, but the client runs {hello.draft_id}; use "
            f"checkpoint {served} on the client, or restart moa-server with --draft-checkpoint set to the client's"
        )


def _describe(target: dict[str, Any]) -> str:
    return (
        f"{target.get('name')} ({target.get('num_layers')} layers, hidden {target.get('hidden_size')}, "
        f"vocab {target.get('vocab_size')}, tokenizer {target.get('tokenizer_hash')})"
    )
