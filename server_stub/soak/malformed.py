"""Malformed frames for the soak, one kind at a time: what an attacker or a broken client sends.

Each generator returns ``(kind, frame)``: bytes or text, plus whether the frame is sent before
Hello (then any answer is fatal and the connection is replaced). Sizes stay small except the
``oversized`` kinds, which go just over the server's frame limit or over its socket limit.
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable

import torch

from drafts.protocol import PROTOCOL_VERSION, Bye, Generate, Hello, Needs, Prefill, Rewind, Verify, encode
from drafts.protocol.codec import PREFIX_BYTES
from drafts.sampling import SamplingConfig
from drafts.tree import DraftTree

Frame = bytes | str


def valid_frames(rng: random.Random, vocab: int) -> list[bytes]:
    """Well-formed requests to corrupt."""
    tokens = torch.tensor([rng.randrange(vocab) for _ in range(rng.randint(1, 40))], dtype=torch.int64)
    q = torch.softmax(torch.randn(3, min(vocab, 512)), dim=-1)  # (N, V') a q over a wrong vocabulary, too
    tree = DraftTree.chain([rng.randrange(vocab) for _ in range(3)], q)
    sampling = SamplingConfig(0.8, 20, 0.9, seed=rng.randrange(2**31))
    return [
        encode(Prefill(rng.randrange(1, 1000), tokens)),
        encode(Verify.of(rng.randrange(1, 1000), rng.randrange(vocab), tree, sampling)),
        encode(Generate(rng.randrange(1, 1000), 1, 5, torch.tensor([0]), SamplingConfig())),
        encode(Rewind(rng.randrange(1, 1000), rng.randrange(10**6))),
    ]


def _split(frame: bytes) -> tuple[dict[str, object], bytes]:
    (length,) = struct.unpack_from(">I", frame, 4)
    return json.loads(frame[PREFIX_BYTES : PREFIX_BYTES + length]), frame[PREFIX_BYTES + length :]


def _join(header: dict[str, object], payload: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return b"MOA\x01" + struct.pack(">I", len(raw)) + raw + payload


def random_bytes(rng: random.Random, frame: bytes) -> Frame:
    return rng.randbytes(rng.randint(0, 4096))


def bit_flipped(rng: random.Random, frame: bytes) -> Frame:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 8)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def truncated(rng: random.Random, frame: bytes) -> Frame:
    return frame[: rng.randrange(len(frame))]


def lying_tensor(rng: random.Random, frame: bytes) -> Frame:
    """A tensor entry whose length, shape, dtype or offset lies about the payload."""
    header, payload = _split(frame)
    entries = header.get("tensors")
    if not isinstance(entries, list) or not entries:
        return _join({**header, "tensors": [{"name": "tokens"}]}, payload)
    entry = rng.choice(entries)
    lie = rng.choice(["nbytes", "shape", "dtype", "offset", "huge"])
    if lie == "nbytes":
        entry["nbytes"] = entry["nbytes"] + rng.choice([-8, 8, 10**12])
    elif lie == "shape":
        entry["shape"] = [d * rng.choice([2, 3]) + 1 for d in entry["shape"]] or [5]
    elif lie == "dtype":
        entry["dtype"] = rng.choice(["float64", "int8", "uint64", "complex64", "object", ""])
    elif lie == "offset":
        entry["offset"] = entry["offset"] + rng.choice([1, -1, 2**40])
    else:
        entry["shape"] = [2**31, 2**31]
    return _join(header, payload)


def lying_field(rng: random.Random, frame: bytes) -> Frame:
    """A header field of the wrong type, missing, extra or out of range."""
    header, payload = _split(frame)
    key = rng.choice([k for k in header if k != "tensors"])
    change = rng.choice(["missing", "string", "negative", "float", "nested", "extra"])
    if change == "missing":
        del header[key]
    elif change == "extra":
        header["surplus"] = 1
    else:
        header[key] = {"string": "x", "negative": -1, "float": 1e308, "nested": {"a": [1, {"b": None}]}}[change]
    return _join(header, payload)


def out_of_order(rng: random.Random, frame: bytes) -> Frame:
    """A well-formed message the open session does not allow (a second Hello, a server's message)."""
    hello = Hello(PROTOCOL_VERSION, "soak", {"name": "x"}, "d", Needs())
    return rng.choice(
        [encode(hello), encode(Bye()).replace(b"bye", b"welcome"), frame.replace(b"prefill", b"prefilled")]
    )


def text_frame(rng: random.Random, frame: bytes) -> Frame:
    return rng.choice(
        [frame.decode("latin-1").encode("ascii", "ignore").decode(), "hello", json.dumps({"type": "bye"})]
    )


KINDS: dict[str, Callable[[random.Random, bytes], Frame]] = {
    "random": random_bytes,
    "bit_flipped": bit_flipped,
    "truncated": truncated,
    "lying_tensor": lying_tensor,
    "lying_field": lying_field,
    "out_of_order": out_of_order,
    "text": text_frame,
}


def oversized(nbytes: int) -> bytes:
    """A frame of ``nbytes`` whose header claims a payload of that size (a Prefill of int64 tokens)."""
    count = max(1, (nbytes - 300) // 8)
    header = {
        "type": "prefill",
        "request_id": 1,
        "tensors": [{"name": "tokens", "dtype": "int64", "shape": [count], "offset": 0, "nbytes": count * 8}],
    }
    return _join(header, bytes(count * 8))
