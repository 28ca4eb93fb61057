"""The verifier protocol, sans I/O: what the client (``app/``) and the server (``server_stub/``) both speak.

    messages.py  the messages, as domain values (MessageType, ErrorCode, Hello ... Cancel, Bye);
                 its docstring is the protocol's reference (Cancel's semantics included)
      client_messages.py  Needs, Hello, Prefill, Verify, Rewind, Generate, Fetch, Propose, Cancel, Bye
      server_messages.py  Capabilities, Timings, Welcome, Prefilled, Verified, Rewound, Generated, Fetched, Error
      message_type.py     PROTOCOL_VERSION and MessageType, the frame header's type tag
    tensors.py   tensor payloads: explicit dtype and shape, raw bytes; int8 quantisation
    codec.py     one binary frame per message: encode / decode
    readers.py   typed messages from a parsed frame header (each field read once, checked)
    limits.py    Limits: what a receiver accepts, checked before allocating
    state.py     the session state machines: ServerProtocol, ClientProtocol
    vectors.py   a draft's Activations as named reply tensors, and back (both ends)

Nothing here opens a socket or imports websockets; the asyncio shells live with their ends.
"""

from __future__ import annotations

from drafts.protocol.codec import Limits, decode, encode
from drafts.protocol.messages import (
    PROTOCOL_VERSION,
    Bye,
    Cancel,
    Capabilities,
    Error,
    ErrorCode,
    Fetch,
    Fetched,
    Generate,
    Generated,
    Hello,
    Message,
    MessageType,
    Needs,
    Prefill,
    Prefilled,
    Propose,
    Rewind,
    Rewound,
    Timings,
    Verified,
    Verify,
    Welcome,
)
from drafts.protocol.state import Answered, ClientProtocol, FrameRejected, ServerProtocol, SessionState, Streamed

__all__ = [
    "PROTOCOL_VERSION",
    "Answered",
    "Bye",
    "Cancel",
    "Capabilities",
    "ClientProtocol",
    "Error",
    "ErrorCode",
    "Fetch",
    "Fetched",
    "FrameRejected",
    "Generate",
    "Generated",
    "Hello",
    "Limits",
    "Message",
    "MessageType",
    "Needs",
    "Prefill",
    "Prefilled",
    "Propose",
    "Rewind",
    "Rewound",
    "ServerProtocol",
    "SessionState",
    "Streamed",
    "Timings",
    "Verified",
    "Verify",
    "Welcome",
    "decode",
    "encode",
]
