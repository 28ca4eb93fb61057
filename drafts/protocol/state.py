"""Sans-I/O session state machines for both ends: bytes in -> events out, messages in -> bytes to send.

Neither class touches a socket. The host (the websockets shell in ``app/`` or ``server_stub/``)
feeds every received frame to ``receive`` and handles the events it returns, and sends the bytes
``send`` returns::

    for event in session.receive(frame):
        match event:
            case FrameRejected(reply=reply): await websocket.send(reply)   # then close if fatal
            case Verify(): await websocket.send(session.send(verified_reply(event)))
            ...
    if session.state is SessionState.CLOSED: await websocket.close()

Both ends go through the same states::

    AWAITING_HELLO --Hello--> AWAITING_WELCOME --Welcome--> OPEN --Bye / fatal Error--> CLOSED

``receive`` never raises: a frame that does not decode, a text frame (this protocol is binary
only, so a text frame is refused even when its bytes would form a valid frame), or a message the
state does not allow, comes back as :class:`FrameRejected` carrying the Error to send the peer. Before the session is
open every rejection is fatal; once open, the server rejects one bad request and carries on, while
the client treats any bad server frame as fatal (it cannot trust the session's state any more).
After a fatal rejection the state is CLOSED and further input is ignored. ``send`` raises
:class:`~drafts.errors.UnexpectedMessageError` when the host itself breaks the order: a bug, not
input.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from drafts.errors import MalformedFrameError, ProtocolError, UnexpectedMessageError, UnsupportedVersionError
from drafts.protocol.codec import Limits, decode, encode
from drafts.protocol.messages import (
    PROTOCOL_VERSION,
    REPLY_TYPES,
    Bye,
    Cancel,
    Error,
    Fetch,
    Fetched,
    Generate,
    Generated,
    Hello,
    Message,
    Prefill,
    Prefilled,
    Propose,
    Reply,
    Request,
    Rewind,
    Rewound,
    Verified,
    Verify,
    Welcome,
)


class SessionState(Enum):
    AWAITING_HELLO = "awaiting hello"  # nothing exchanged yet
    AWAITING_WELCOME = "awaiting welcome"  # Hello sent/received; the server's host decides
    OPEN = "open"  # requests and replies flow
    CLOSED = "closed"  # after Bye or a fatal Error; input is ignored


@dataclass(frozen=True)
class FrameRejected:
    """An incoming frame was refused: send ``reply`` (the encoded ``error``), then close if it is fatal."""

    error: Error
    reply: bytes


@dataclass(frozen=True)
class Answered:
    """The server answered one of the client's requests."""

    request: Request
    reply: Reply


@dataclass(frozen=True)
class Streamed:
    """A part of a Generate's reply arrived; the request stays in flight until its ``done`` part."""

    request: Generate
    part: Generated


Event = Message | FrameRejected | Answered | Streamed


class _Session:
    """What both ends share: decoding, rejecting, closing."""

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.state = SessionState.AWAITING_HELLO

    def receive(self, data: bytes | str) -> list[Event]:
        """The events one incoming frame produces (none once CLOSED); ``str`` is a websocket text frame."""
        if self.state is SessionState.CLOSED:
            return []
        try:
            if isinstance(data, str):
                raise MalformedFrameError("a text frame is not a moa-chat frame; send binary frames (codec.encode)")
            return self._handle(decode(data, self.limits))
        except ProtocolError as exc:
            return [self._reject(exc)]

    def _reject(self, exc: ProtocolError) -> FrameRejected:
        error = Error(exc.request_id, exc.code, str(exc), fatal=self._is_fatal(exc))
        if error.fatal:
            self.state = SessionState.CLOSED
        return FrameRejected(error, encode(error))

    @property
    def is_open(self) -> bool:
        return self.state is SessionState.OPEN

    def _received_error(self, error: Error) -> None:
        if error.fatal:
            self.state = SessionState.CLOSED

    def _unexpected(self, message: Message, sender: str) -> UnexpectedMessageError:
        return UnexpectedMessageError(
            f"{sender} sent {message.TYPE.value} while the session is {self.state.value}; "
            "follow the order hello -> welcome -> requests -> bye",
            request_id=getattr(message, "request_id", None),
        )

    def _handle(self, message: Message) -> list[Event]:
        raise NotImplementedError

    def _is_fatal(self, exc: ProtocolError) -> bool:
        raise NotImplementedError


class ServerProtocol(_Session):
    """The verifier's end: expects Hello, lets the host answer it, then takes requests until Bye."""

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)
        self.hello: Hello | None = None  # the client's Hello, for the host to check target and draft

    def _handle(self, message: Message) -> list[Event]:
        if isinstance(message, Error):
            self._received_error(message)
        elif self.state is SessionState.AWAITING_HELLO and isinstance(message, Hello):
            if message.protocol_version != PROTOCOL_VERSION:
                raise UnsupportedVersionError(
                    f"the client speaks protocol version {message.protocol_version}, this server "
                    f"{PROTOCOL_VERSION}; update moa-chat on the older side"
                )
            self.hello = message
            self.state = SessionState.AWAITING_WELCOME
        elif self.state is SessionState.OPEN and isinstance(
            message, Prefill | Verify | Rewind | Generate | Fetch | Propose | Cancel
        ):
            pass  # the host answers; requests are handled in order, a Fetch, Propose or Cancel at once
        elif self.state is SessionState.OPEN and isinstance(message, Bye):
            self.state = SessionState.CLOSED
        else:
            raise self._unexpected(message, "the client")
        return [message]

    def _is_fatal(self, exc: ProtocolError) -> bool:
        return self.state is not SessionState.OPEN or isinstance(exc, UnsupportedVersionError)

    def send(self, message: Welcome | Prefilled | Verified | Rewound | Generated | Fetched | Error) -> bytes:
        """The frame to send for ``message``; a fatal Error closes the session."""
        if self.state is SessionState.CLOSED:
            raise UnexpectedMessageError(f"cannot send {message.TYPE.value}: the session is closed")
        if isinstance(message, Welcome) and self.state is SessionState.AWAITING_WELCOME:
            self.state = SessionState.OPEN
        elif isinstance(message, Error):
            self._received_error(message)  # our own fatal Error closes the session just like the peer's
        elif not (isinstance(message, Prefilled | Verified | Rewound | Generated | Fetched) and self.is_open):
            raise self._unexpected(message, "the server")
        return encode(message)


class ClientProtocol(_Session):
    """The user's end: sends Hello, waits for Welcome, then pipelines requests and matches their replies."""

    def __init__(self, limits: Limits | None = None) -> None:
        super().__init__(limits)
        self.welcome: Welcome | None = None  # the server's Welcome, once the session is open
        self.in_flight: dict[int, Request] = {}  # request_id -> request not yet answered
        self._next_id = 0

    def new_request_id(self) -> int:
        """An id no earlier request of this session used."""
        self._next_id += 1
        return self._next_id

    def send(self, message: Hello | Prefill | Verify | Rewind | Generate | Fetch | Propose | Cancel | Bye) -> bytes:
        """The frame to send for ``message``; requests are tracked until their reply arrives.

        A Cancel leaves its request in flight: the request's own reply still comes (and may
        already be on its way, in which case the server ignores the Cancel). A Propose has no
        reply and is not tracked.
        """
        if isinstance(message, Hello) and self.state is SessionState.AWAITING_HELLO:
            self.state = SessionState.AWAITING_WELCOME
        elif isinstance(message, Prefill | Verify | Rewind | Generate | Fetch) and self.state is SessionState.OPEN:
            if message.request_id in self.in_flight:
                raise UnexpectedMessageError(f"request {message.request_id} is still in flight; use new_request_id()")
            self.in_flight[message.request_id] = message
        elif isinstance(message, Cancel | Propose) and self.state is SessionState.OPEN:
            pass
        elif isinstance(message, Bye) and self.state is SessionState.OPEN:
            self.state = SessionState.CLOSED
        else:
            raise self._unexpected(message, "the client")
        return encode(message)

    def _handle(self, message: Message) -> list[Event]:
        if isinstance(message, Welcome) and self.state is SessionState.AWAITING_WELCOME:
            return self._open(message)
        if isinstance(message, Error) and message.request_id is None:
            self._received_error(message)
            return [message]
        if (
            isinstance(message, Prefilled | Verified | Rewound | Generated | Fetched | Error)
            and self.state is SessionState.OPEN
        ):
            return [self._match(message)]
        raise self._unexpected(message, "the server")

    def _open(self, welcome: Welcome) -> list[Event]:
        if welcome.protocol_version != PROTOCOL_VERSION:
            raise UnsupportedVersionError(
                f"the server speaks protocol version {welcome.protocol_version}, this client "
                f"{PROTOCOL_VERSION}; update moa-chat on the older side"
            )
        self.welcome = welcome
        self.state = SessionState.OPEN
        return [welcome]

    def _match(self, reply: Reply) -> Answered | Streamed:
        request = None if reply.request_id is None else self.in_flight.get(reply.request_id)
        if request is None or not (isinstance(reply, Error) or REPLY_TYPES[request.TYPE] is reply.TYPE):
            raise UnexpectedMessageError(
                f"the server sent {reply.TYPE.value} for request {reply.request_id}, which is not in flight "
                f"(in flight: {sorted(self.in_flight)[:10]}); the server is out of step with this client",
            )
        if isinstance(reply, Generated) and not reply.done:
            assert isinstance(request, Generate)
            return Streamed(request, reply)
        del self.in_flight[request.request_id]
        if isinstance(reply, Error):
            self._received_error(reply)
        return Answered(request, reply)

    def _is_fatal(self, exc: ProtocolError) -> bool:
        return True  # a server that sends a bad frame cannot be trusted with the session's state
