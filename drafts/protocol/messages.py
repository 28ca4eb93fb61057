"""The verifier protocol's messages: domain values, each named as what it is.

A session, in order (client = the user's machine running the draft, server = the verifier)::

    client                                  server
    Hello(target, draft, needs)       ->
                                      <-    Welcome(session, capabilities)   or a fatal Error
    Prefill(id, tokens)               ->                                     append committed tokens
                                      <-    Prefilled(id, committed, activations)
    Verify(id, root, tree, q)         ->                                     one target pass over the tree
                                      <-    Verified(id, accepted path, next token, activations)
    Rewind(id, length)                ->                                     drop tokens after ``length``
                                      <-    Rewound(id, committed)
    Generate(id, root, max, stops)    ->                                     the target decodes alone
                                      <-    Generated(id, tokens, done=False) ...   one per token
                                      <-    Generated(id, tokens, done=True)        the reply
    Propose(id, base, tree)           ->                                     drafts for a running Generate(propose=True)
    Prefill(id, tokens, later=True)   ->                                     append, keep the activations
                                      <-    Prefilled(id, committed)         no activations
    Fetch(id, start, length)          ->                                     beside the queue: the kept rows
                                      <-    Fetched(id, start, activations)
    Cancel(id)                        ->                                     stop request ``id`` (no reply of its own)
    Bye()                             ->                                     also stops every pending request

Every request (Prefill, Verify, Rewind, Generate) gets exactly one reply: its result or an Error
with its ``request_id``; a Generate's reply is its ``done`` Generated part, after the parts it
streams (plain server-side decoding, the "API streaming" baseline and the draftless mode).
Requests may be pipelined; the server handles them in order. ``committed`` is always the
server's committed length after the request. Activations are those of the tokens the request
committed, one row per token, keyed as in ``Needs``: ``"kv"`` (m, L, W),
``"hidden:<layer>"`` (m, H), ``"memory"`` (m, H) for a compressed draft input; an int8-quantised
entry ``name`` comes with ``name + ".scale"`` (see :mod:`drafts.protocol.tensors`).

**Cancel** (protocol version 3). ``Cancel(request_id)`` names a Generate or Verify (any pending
request, in fact) the client no longer wants; it has no reply of its own, and the named request
still gets exactly one reply:

- a request that has not started yet (queued on its connection, or waiting for the model) is
  answered with ``Error(request_id, CANCELLED, fatal=False)`` and changed nothing; a Generate in
  that position is answered like a running one (below), with no tokens;
- a running Generate stops within one decoding step: its reply is the usual ``done`` Generated
  part with ``cancelled=True``, carrying no new token (``tokens`` is empty); the session has
  committed exactly ``committed`` tokens, and the next root is the newest token of the parts
  already streamed (the Generate's ``root_token`` if none was);
- a Verify whose forward pass has started is answered normally (Verified): it is one step;
- a Cancel naming a request already answered, or never sent, is ignored (the race is normal).

The session stays open and usable after a Cancel: the client continues from ``committed``.
``Bye`` cancels every pending request the same way (the replies are not sent: the session is
closed), and a dropped connection stops its session's work within one step too.

**Sparse proposals** (protocol version 4). A Verify at T > 0 carries the proposal each node was
sampled from either dense (``q`` (N, V)) or as its top K entries (``q_indices`` (N, K) int32
target-vocabulary ids, ``q_weights`` (N, K) float16/float32): the node's q' is the weights
normalised over those ids and 0 elsewhere, and the draft must have sampled from exactly that q'
(the rule and why it is lossless: :mod:`drafts.sparse_proposal`). ~192 bytes a node at K = 32 in
float16 instead of ~197 KB dense. At most one of the two forms per Verify.

**Speculative streaming** (protocol version 6). Over a link whose round trip is long against a
target step, round-based speculation (Verify, wait, Verify) leaves the verifier idle. A
``Generate`` with ``propose=True`` decodes as a plain one (every step yields at least one target
token) while the client streams ``Propose(request_id, base, tokens, parents, q | q_indices,
q_weights)`` messages for it: a draft tree (Verify's layout and checks; q as the Generate's
sampling needs) whose root is the session token at index ``base`` (the newest token of a part
the client had: ``part.committed``), a node at depth d guessing index ``base + d``. Propose has
no reply; a newer one replaces an older one not used yet; one for a request that is not a running
proposing Generate is ignored (the race with its end is normal). A malformed one (it does not
decode or check) is refused like any frame, with an Error naming its ``request_id``: when that is
a running proposing Generate the Error is that Generate's reply (the stream stops there, exactly
one reply as always). Before each step, with the session at committed length c (the root at
index c), the server looks at the newest proposal and, if ``start <= base <= c`` (``start``: the
Generate's root index) and the tree holds the tokens of indices base+1..c as a path, verifies the
subtree below that path's end with the root in the same forward pass (q rows kept: exact at
T > 0), cut to ``max_tree_nodes`` by index order (parents first) and to the tokens still wanted;
otherwise the step is the root alone. A proposal stays until a newer one replaces it, so a deep
one serves step after step (each step keeps only nodes no earlier step looked at). The rule:
:mod:`drafts.proposal_match`.
Each step is one ``Generated`` part: its first ``drafted`` tokens are accepted draft tokens, the
rest the target's; ``activations`` hold the rows of the tokens the step committed (as Verified).
``Welcome.capabilities.propose`` says the server takes proposals; a server started without them
(``moa-server --no-propose``) refuses ``Generate(propose=True)`` with BAD_FRAME (and ignores a
Propose), so a client reads the capability first. At T = 0 the tokens are those of a plain
Generate whatever the proposals are.

**Vectors later** (protocol version 7). A prompt's Prefilled replies carry its activations (a
MoA draft's memory vectors: ~1.2 KB a token), so a client prefills in chunks to keep the bytes in
flight small, and each chunk is a forward of its own before the first Verify or Generate is
answered. ``Prefill(later=True)`` asks the server to run the tokens at once and answer a
``Prefilled`` with no activations, *keeping* them (the rows of that Prefill only; a newer
``Prefill(later=True)`` replaces them, a Rewind below their end drops them; activations that come
from the KV, a MoA draft's memory vectors, the server may compute only when they are fetched).
The client sends its first Verify or Generate right behind, and after that reply (so they never
go ahead of it on the link) asks for the kept rows with ``Fetch(request_id, start, length)``, in
pieces it sizes (the bytes in flight stay bounded, as the chunks' were). A Fetch needs no forward
of the target: the server answers it beside the queue, not behind the requests queued or running
before it (a running Generate included; at most one of its steps goes first), with
``Fetched(request_id, start, activations)``, one row per token from session index ``start``;
rows not kept (never, or no more) are refused with BAD_FRAME naming the rows it keeps.
``Welcome.capabilities.later`` says the server takes both; a server started with
``moa-server --no-later`` refuses them with BAD_FRAME, and a client prefills in chunks as before.

Messages check their own invariants (tensor dtypes and shapes, ranges) at construction and raise
:class:`~drafts.errors.MalformedFrameError`, so a bad message is refused the same way whether it
was built locally or decoded off the wire. How they are laid out in bytes lives in
:mod:`drafts.protocol.codec`; the scalar field types are the ones JSON carries.

This module is the reference and the one import for them all; the classes live in
:mod:`~drafts.protocol.client_messages` (Needs, Hello, the requests, Propose, Cancel, Bye),
:mod:`~drafts.protocol.server_messages` (Capabilities, Timings, Welcome, the replies, Error) and
:mod:`~drafts.protocol.message_type` (PROTOCOL_VERSION, MessageType).
"""

from __future__ import annotations

from drafts.errors import ErrorCode
from drafts.protocol.client_messages import (
    Bye,
    Cancel,
    Fetch,
    Generate,
    Hello,
    Needs,
    Prefill,
    Propose,
    Rewind,
    Verify,
)
from drafts.protocol.message_type import PROTOCOL_VERSION, MessageType
from drafts.protocol.server_messages import (
    Capabilities,
    Error,
    Fetched,
    Generated,
    Prefilled,
    Rewound,
    Timings,
    Verified,
    Welcome,
)

__all__ = [
    "PROTOCOL_VERSION",
    "REPLY_TYPES",
    "Bye",
    "Cancel",
    "Capabilities",
    "ClientMessage",
    "Error",
    "ErrorCode",
    "Fetch",
    "Fetched",
    "Generate",
    "Generated",
    "Hello",
    "Message",
    "MessageType",
    "Needs",
    "Prefill",
    "Prefilled",
    "Propose",
    "Reply",
    "Request",
    "Rewind",
    "Rewound",
    "ServerMessage",
    "Timings",
    "Verified",
    "Verify",
    "Welcome",
]

Request = Prefill | Verify | Rewind | Generate | Fetch
Reply = Prefilled | Verified | Rewound | Generated | Fetched | Error
ClientMessage = Hello | Prefill | Verify | Rewind | Generate | Fetch | Propose | Cancel | Bye
ServerMessage = Welcome | Prefilled | Verified | Rewound | Generated | Fetched | Error
Message = ClientMessage | ServerMessage

REPLY_TYPES: dict[MessageType, MessageType] = {
    MessageType.PREFILL: MessageType.PREFILLED,
    MessageType.VERIFY: MessageType.VERIFIED,
    MessageType.REWIND: MessageType.REWOUND,
    MessageType.GENERATE: MessageType.GENERATED,
    MessageType.FETCH: MessageType.FETCHED,
}
