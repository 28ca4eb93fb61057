"""One small, valid example of every message, and a bit-exact comparison for the tests."""

from __future__ import annotations

import dataclasses
import json
import struct

import torch

from drafts.protocol.codec import PREFIX_BYTES
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
from drafts.protocol.state import ClientProtocol, ServerProtocol
from drafts.protocol.tensors import encode_tensor
from drafts.sampling import SamplingConfig

TARGET: dict[str, str | int] = {
    "name": "SmolLM2-135M-Instruct",
    "num_layers": 30,
    "hidden_size": 576,
    "vocab_size": 49152,
    "tokenizer_hash": "0123456789abcdef",
}


def hello(**changes: object) -> Hello:
    base = Hello(PROTOCOL_VERSION, "moa-chat/0.1.0", TARGET, "moa-smollm2-v1", Needs((0, 30), True, None))
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def welcome(**changes: object) -> Welcome:
    capabilities = Capabilities(2048, 64, 2**20, "float16", batching=False)
    base = Welcome(PROTOCOL_VERSION, "s-1", TARGET, capabilities, resumed=False, committed=0)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def verify(request_id: int = 1, nodes: int = 3, vocab: int = 16) -> Verify:
    gen = torch.Generator().manual_seed(request_id)
    q = torch.softmax(torch.randn(nodes, vocab, generator=gen), dim=-1).to(torch.bfloat16)  # (N, V)
    tokens = torch.randint(0, vocab, (nodes,), generator=gen)
    parents = torch.tensor([max(0, i - 1) for i in range(nodes)], dtype=torch.int64)
    return Verify(request_id, 7, tokens, parents, q, SamplingConfig(0.8, 20, 0.95, seed=3))


def verified(request_id: int = 1) -> Verified:
    gen = torch.Generator().manual_seed(request_id)
    kv = torch.randn(3, 2, 8, generator=gen).half()  # (m, L, W)
    hidden = torch.randn(3, 4, generator=gen).to(torch.bfloat16)  # (m, H)
    hidden[0, :4] = torch.tensor([float("nan"), float("-inf"), -0.0, 1e-40])  # bit patterns must survive
    activations = {"kv": kv, "hidden:2": hidden}
    return Verified(request_id, torch.tensor([1, 2]), 11, 42, activations, Timings(0.5, 3.25))


def propose(request_id: int = 7, base: int = 12, nodes: int = 3, vocab: int = 16) -> Propose:
    """A proposal with dense q for a running proposing Generate ``request_id``."""
    gen = torch.Generator().manual_seed(base)
    q = torch.softmax(torch.randn(nodes, vocab, generator=gen), dim=-1)  # (N, V)
    tokens = torch.randint(0, vocab, (nodes,), generator=gen)
    parents = torch.tensor([0, *range(nodes - 1)], dtype=torch.int64)
    return Propose(request_id, base, tokens, parents, q)


def sparse_propose(request_id: int = 7, base: int = 12) -> Propose:
    """A proposal with top-K q: a root with two children, the first with a child."""
    indices = torch.tensor([[3, 5], [4, 9], [1, 2]], dtype=torch.int32)  # (N, K)
    weights = torch.tensor([[0.6, 0.4], [0.5, 0.5], [0.9, 0.1]], dtype=torch.float16)
    return Propose(request_id, base, torch.tensor([3, 9, 1]), torch.tensor([0, 0, 1]), None, indices, weights)


def one_of_each() -> list[Message]:
    """Every message type, client's first, with tensors of every payload dtype class."""
    return [
        hello(resume_session="s-0", resume_length=12),
        Prefill(2, torch.tensor([1, 2, 3])),
        Prefill(3, torch.tensor([4, 5]), later=True),
        Fetch(9, 3, 2),
        verify(),
        Verify(4, 0, torch.tensor([5]), torch.tensor([0]), None, SamplingConfig()),
        Rewind(5, 3),
        Generate(7, 4, 64, torch.tensor([2, 0]), SamplingConfig(0.7, 0, 1.0, seed=5)),
        Generate(8, 4, 64, torch.tensor([2]), SamplingConfig(), propose=True),
        propose(),
        sparse_propose(),
        Propose(8, 0, torch.tensor([5, 6]), torch.tensor([0, 1])),
        Propose(8, 3, torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=torch.int64)),
        Cancel(7),
        Bye(),
        welcome(),
        welcome(capabilities=Capabilities(2048, 64, 2**20, "float16", False, "cpu", propose=True)),
        welcome(capabilities=Capabilities(2048, 64, 2**20, "float16", False, "cpu", propose=True, later=True)),
        Prefilled(2, 3, {"memory": torch.randn(3, 6)}, Timings(0.0, 1.0)),
        verified(),
        Verified(6, torch.empty(0, dtype=torch.int64), 9, 43),
        Rewound(5, 3),
        Prefilled(3, 5),
        Fetched(9, 3, {"memory": torch.randn(2, 6).half()}),
        Generated(7, torch.tensor([9]), 12, done=False, timings=Timings(0.25, 4.0)),
        Generated(7, torch.empty(0, dtype=torch.int64), 12, done=True),
        Generated(7, torch.empty(0, dtype=torch.int64), 12, done=True, cancelled=True),
        Generated(
            8,
            torch.tensor([5, 6, 9]),
            15,
            False,
            Timings(0.1, 9.5),
            drafted=2,
            activations={"memory": torch.randn(3, 6)},
        ),
        Generated(8, torch.tensor([9]), 16, True, drafted=0, activations={"kv": torch.randn(1, 2, 8).half()}),
        Error(None, ErrorCode.TARGET_MISMATCH, "the server runs gemma-3-270m; pick a SmolLM2 draft", fatal=True),
        Error(3, ErrorCode.TREE_TOO_LARGE, "draft at most 64 nodes", fatal=False),
    ]


def assert_same(a: Message, b: Message) -> None:
    """``a`` and ``b`` are the same message, tensors bit for bit (dtype, shape and bytes)."""
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            assert encode_tensor(x) == encode_tensor(y), f.name
        elif f.name == "activations":
            assert list(x) == list(y)
            for key in x:
                assert encode_tensor(x[key]) == encode_tensor(y[key]), key
        else:
            assert x == y, f.name


def open_session() -> tuple[ClientProtocol, ServerProtocol]:
    """A client and a server protocol past the handshake."""
    client, server = ClientProtocol(), ServerProtocol()
    server.receive(client.send(hello()))
    client.receive(server.send(welcome()))
    return client, server


def edited_frame(frame: bytes, edit: dict[str, object]) -> bytes:
    """``frame`` with header fields changed (None: removed), the tensors kept."""
    (length,) = struct.unpack_from(">I", frame, 4)
    header = json.loads(frame[PREFIX_BYTES : PREFIX_BYTES + length])
    for key, value in edit.items():
        if value is None:
            header.pop(key)
        else:
            header[key] = value
    raw = json.dumps(header).encode()
    return frame[:4] + struct.pack(">I", len(raw)) + raw + frame[PREFIX_BYTES + length :]
