"""One client connection: the thin websockets shell around a sans-I/O :class:`ServerProtocol`.

    handshake  Hello -> target, draft and needs checked, session opened or resumed -> Welcome,
               or a fatal Error that says what to change, then close (:mod:`server_stub.handshake`)
    serve      the reader turns frames into protocol events on a queue; the processor answers
               them in order, one at a time, through the inference worker (never on this loop);
               a Cancel is acted on by the reader at once (the request's CancelToken), ahead of
               the queue, so the cancelled request stops within one step; a Propose likewise
               goes straight into its Generate's ProposalBox (:mod:`server_stub.proposals`),
               and a malformed one naming a proposing Generate fails that Generate; a Fetch
               is answered beside the queue by a task of its own, from the rows its session
               keeps (:mod:`server_stub.kept`), at once or after a backend call that runs
               between a running Generate's steps: it must not wait for the Generate's end
    finish     Bye closes the session; a drop, an idle timeout or a fatal error detach it, and
               it waits ``resume_grace`` seconds for a Hello with ``resume_session``. Bye and a
               drop cancel every pending request first: nobody is listening for their replies

Every failure of a request becomes an Error reply for that request and the connection goes on;
only the protocol's fatal errors (before Welcome, or a version mismatch) end it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from drafts.errors import ErrorCode
from drafts.protocol import (
    Bye,
    Cancel,
    Error,
    Fetch,
    Fetched,
    FrameRejected,
    Generate,
    Generated,
    Prefill,
    Propose,
    Rewind,
    ServerProtocol,
    SessionState,
    Verify,
)
from server_stub.answers import Reply, Request, fetched, reply_to
from server_stub.cancels import CancelToken
from server_stub.errors import error_code
from server_stub.handshake import Handshake
from server_stub.kept import require_later
from server_stub.logs import log_event
from server_stub.proposals import ProposalBox
from server_stub.services import Services
from server_stub.sessions import SessionRecord

log = logging.getLogger(__name__)
MAX_PIPELINED = 32  # requests queued per connection before the reader stops reading (backpressure)
_STOP = object()  # the processor's end-of-queue marker


class Connection:
    """Serves one websocket; see the module docstring."""

    def __init__(self, websocket: ServerConnection, services: Services) -> None:
        self.ws = websocket
        self.services = services
        self.protocol = ServerProtocol(services.limits)
        self.record: SessionRecord | None = None
        self.peer = str(websocket.remote_address)
        address = websocket.remote_address
        self.client = str(address[0]) if isinstance(address, tuple) and address else self.peer
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=MAX_PIPELINED)
        self._busy = False  # the processor is answering a request
        self._bye = False  # the client ended the session
        self._superseded = False  # another connection resumed this one's session
        self._closing: asyncio.Task[None] | None = None
        self._pending: dict[int, CancelToken] = {}  # request_id -> token, from read until answered
        self._queued: dict[int, int] = {}  # request_id -> bytes of its frame, from read until answered
        self._boxes: dict[int, ProposalBox] = {}  # request_id -> proposals of a proposing Generate, until answered
        self._fetches: set[asyncio.Task[None]] = set()  # Fetches being answered, beside the queue

    async def run(self) -> None:
        refusal = self.services.slots.admit(self.client)
        if refusal is not None:
            await self._refuse_connection(refusal)
            return
        handshake = Handshake(self.ws, self.protocol, self.services, self, self.client)
        try:
            welcomed = await handshake.run()
            self.record = handshake.record
            if welcomed:
                await self._serve()
        except ConnectionClosed:
            pass  # a dropped client: its session waits for a resume
        finally:
            self.record = handshake.record  # attached even if the Welcome could not be sent: detach it below
            self.services.slots.leave(self.client)
            self.services.queued.give(sum(self._queued.values()))
            self._queued.clear()
            await self._finish()

    async def _refuse_connection(self, refusal: str) -> None:
        self.services.rejections.log(log, "connection.refused", peer=self.peer, reason=refusal)
        with contextlib.suppress(ConnectionClosed):
            await self.ws.send(self.protocol.send(Error(None, ErrorCode.BUSY, refusal, fatal=True)))
        await self.ws.close(1013, "server at its connection limit")

    def supersede(self) -> None:
        self._superseded = True
        reason = "session resumed on another connection"
        self._closing = asyncio.get_running_loop().create_task(self.ws.close(1000, reason))

    # -- serving ---------------------------------------------------------------------------------
    async def _serve(self) -> None:
        processor = asyncio.create_task(self._process())
        try:
            await self._read()
            await self._queue.put(_STOP)
            await processor  # answer what was asked before Bye or a fatal error
        finally:
            self._cancel_all("the connection ended")  # a drop: queued work is skipped, a Generate stops
            processor.cancel()
            for task in self._fetches:
                task.cancel()

    async def _read(self) -> None:
        while self.protocol.state is SessionState.OPEN:
            try:
                frame = await asyncio.wait_for(self.ws.recv(), self.services.config.idle_timeout)
            except TimeoutError:
                if self._busy or not self._queue.empty():
                    continue  # the client is waiting for us, not idle
                await self._close_idle()
                return
            for event in self.protocol.receive(frame):
                if isinstance(event, Cancel):
                    self._cancel(event.request_id, "Cancel")
                    continue
                if isinstance(event, Fetch):
                    self._fetch(event)
                    continue
                if isinstance(event, Propose) or (isinstance(event, FrameRejected) and self._fails_a_stream(event)):
                    self._propose(event)
                    continue
                if isinstance(event, Prefill | Verify | Rewind | Generate):
                    if not await self._admit(event, len(frame)):
                        continue
                    self._pending.setdefault(event.request_id, CancelToken())
                    if isinstance(event, Generate) and event.propose:
                        self._boxes.setdefault(event.request_id, ProposalBox())
                elif isinstance(event, Bye):
                    self._cancel_all("Bye")
                await self._queue.put(event)

    async def _admit(self, request: Request, nbytes: int) -> bool:
        """Account the request's frame against the queued-bytes limits, or refuse it (BUSY) at once."""
        refusal = self.services.queued.take(nbytes, sum(self._queued.values()))
        if refusal is not None:
            self.services.rejections.log(log, "request.refused", session=self._session_id(), reason=refusal)
            await self.ws.send(self.protocol.send(Error(request.request_id, ErrorCode.BUSY, refusal, fatal=False)))
            return False
        self._queued[request.request_id] = self._queued.get(request.request_id, 0) + nbytes
        return True

    def _fetch(self, request: Fetch) -> None:
        """A Fetch, answered beside the queue by a task of its own (the reader reads on meanwhile)."""
        task = asyncio.get_running_loop().create_task(self._answer_fetch(request))
        self._fetches.add(task)
        task.add_done_callback(self._fetches.discard)

    async def _answer_fetch(self, request: Fetch) -> None:
        record = self.record
        assert record is not None
        reply: Fetched | Error
        try:
            require_later(self.services.capabilities, "prefill in chunks instead of fetching")
            reply = await fetched(request, record, self.services.worker)
        except Exception as exc:  # the boundary, as for a queued request: its Error is the reply
            code = error_code(exc)
            if code is ErrorCode.INTERNAL:
                log.exception("fetch.failed", extra={"fields": {"session": self._session_id()}})
            self.services.rejections.log(log, "fetch.refused", session=self._session_id(), reason=str(exc))
            reply = Error(request.request_id, code, str(exc), fatal=False)
        if self.protocol.state is SessionState.OPEN:
            with contextlib.suppress(ConnectionClosed):
                await self.ws.send(self.protocol.send(reply))

    def _cancel(self, request_id: int, reason: str) -> None:
        token = self._pending.get(request_id)
        if token is not None:  # else answered already, or never asked: the race is normal
            token.cancel(reason)
            log_event(log, "request.cancel", logging.DEBUG, session=self._session_id(), request=request_id)

    def _fails_a_stream(self, rejected: FrameRejected) -> bool:
        """Whether a refused frame names a proposing Generate not answered yet (a malformed Propose, say)."""
        return rejected.error.request_id in self._boxes

    def _propose(self, event: Propose | FrameRejected) -> None:
        """A proposal into its Generate's box; a refusal fails that Generate (its Error is the reply)."""
        request_id = event.request_id if isinstance(event, Propose) else event.error.request_id
        box = None if request_id is None else self._boxes.get(request_id)
        if box is None:  # not a proposing Generate in flight: answered already (the race is normal), or never
            log_event(log, "propose.ignored", logging.DEBUG, session=self._session_id(), request=request_id)
        elif isinstance(event, Propose):
            box.put(event)
        else:
            self.services.rejections.log(
                log, "propose.rejected", session=self._session_id(), reason=event.error.message
            )
            box.fail(event.error)

    def _cancel_all(self, reason: str) -> None:
        for token in self._pending.values():
            token.cancel(reason)

    async def _close_idle(self) -> None:
        assert self.record is not None
        message = (
            f"no request for {self.services.config.idle_timeout:g} s: the server closes idle connections to free "
            f"capacity; reconnect with resume_session={self.record.session_id} within "
            f"{self.services.registry.grace:g} s to continue"
        )
        log_event(log, "connection.idle", session=self.record.session_id, peer=self.peer)
        await self.ws.send(self.protocol.send(Error(None, ErrorCode.BUSY, message, fatal=True)))

    async def _process(self) -> None:
        while (item := await self._queue.get()) is not _STOP:
            if self._superseded:  # the session belongs to another connection now: touch it no more
                return
            self._busy = True
            try:
                await self._handle(item)
            except ConnectionClosed:
                return
            finally:
                self._busy = False

    async def _handle(self, item: Any) -> None:
        if isinstance(item, FrameRejected):
            self.services.rejections.log(
                log, "frame.rejected", session=self._session_id(), code=item.error.code.value, reason=item.error.message
            )
            await self.ws.send(item.reply)
        elif isinstance(item, Prefill | Verify | Rewind | Generate):
            await self._answer(item)
        elif isinstance(item, Bye):
            self._bye = True
        elif isinstance(item, Error):
            log_event(
                log,
                "client.error",
                logging.WARNING,
                session=self._session_id(),
                code=item.code.value,
                reason=item.message,
                fatal=item.fatal,
            )

    async def _answer(self, request: Request) -> None:
        assert self.record is not None
        started = time.perf_counter()
        token = self._pending.get(request.request_id) or CancelToken()
        try:
            reply: Reply | Error = await reply_to(
                request,
                self.record,
                self.services.worker,
                self._send_part,
                self.services.capabilities,
                token,
                self._boxes.get(request.request_id),
            )
        except Exception as exc:  # the boundary: any failure of one request is that request's Error reply
            code = error_code(exc)
            if code is ErrorCode.INTERNAL:
                log.exception("request.failed", extra={"fields": {"session": self._session_id()}})
                message = "the server failed on this request (logged there); retry, or report it"
            else:
                message = str(exc)
            reply = Error(request.request_id, code, message, fatal=False)
        finally:
            self._pending.pop(request.request_id, None)
            self._boxes.pop(request.request_id, None)
            self.services.queued.give(self._queued.pop(request.request_id, 0))
        ms = round((time.perf_counter() - started) * 1e3, 2)
        log_event(
            log,
            "request",
            logging.DEBUG,
            session=self._session_id(),
            type=request.TYPE.value,
            ms=ms,
            reply=reply.code.value if isinstance(reply, Error) else reply.TYPE.value,
        )
        if self.protocol.state is SessionState.OPEN:  # after Bye nobody listens
            await self.ws.send(self.protocol.send(reply))

    async def _send_part(self, part: Generated) -> None:
        """A streamed part of a Generate's reply (after Bye nobody listens)."""
        if self.protocol.state is SessionState.OPEN:
            await self.ws.send(self.protocol.send(part))

    # -- the end ---------------------------------------------------------------------------------
    async def _finish(self) -> None:
        record, self.record = self.record, None
        if record is not None and not self._superseded and record.owner is self:
            if self._bye:
                self.services.registry.remove(record.session_id)
                await self._close_in_backend(record.session_id)
                log_event(log, "session.closed", session=record.session_id, peer=self.peer)
            else:
                self.services.registry.detach(record)
                log_event(
                    log,
                    "session.detached",
                    session=record.session_id,
                    peer=self.peer,
                    grace_s=self.services.registry.grace,
                )
        await self.ws.close()

    async def _close_in_backend(self, session_id: str) -> None:
        with contextlib.suppress(RuntimeError):  # the worker has stopped (shutdown): the backend goes with it
            await self.services.worker.call(lambda backend: backend.close(session_id), session_id)

    def _session_id(self) -> str | None:
        return None if self.record is None else self.record.session_id
