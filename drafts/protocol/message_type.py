"""The message set's version and the type tag of each message (one per frame header)."""

from __future__ import annotations

from enum import Enum

PROTOCOL_VERSION = 7  # the message set below; bump on any change to a message or its meaning
# (2: Generate, 3: Cancel, 4: Verify's sparse top-K proposals q_indices / q_weights,
# 5: Welcome's capabilities.device_kind: a version-4 client would refuse the unknown field,
# 6: speculative streaming: Propose, Generate.propose, Generated.drafted / activations, capabilities.propose,
# 7: vectors later: Prefill.later, Fetch / Fetched, capabilities.later)


class MessageType(Enum):
    HELLO = "hello"
    WELCOME = "welcome"
    PREFILL = "prefill"
    PREFILLED = "prefilled"
    VERIFY = "verify"
    VERIFIED = "verified"
    REWIND = "rewind"
    REWOUND = "rewound"
    GENERATE = "generate"
    GENERATED = "generated"
    ERROR = "error"
    CANCEL = "cancel"
    BYE = "bye"
    PROPOSE = "propose"
    FETCH = "fetch"
    FETCHED = "fetched"
