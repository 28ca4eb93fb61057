"""The server's tree limit: set by where the target runs unless --max-tree says, refused with its number."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from drafts.errors import ErrorCode
from drafts.protocol import Error, Verified
from drafts.target.default_shape import verifier_shape
from drafts.tree import DraftTree
from server_stub.backend.base import BackendCapabilities
from server_stub.backend.transformers_backend import TransformersBackend
from server_stub.cli import backend_config
from server_stub.config import MAX_TREE_ACCELERATOR, MAX_TREE_CPU, ServerConfig
from tests.server_stub.remote_client import Conversation
from tests.server_stub.serving import PROMPT, RUNNER, opened, reference, run, serving


class ReportedDevice(TransformersBackend):
    """The tiny CPU target, reported as running on ``device_kind`` (the limit follows what the backend says)."""

    def __init__(self, config: ServerConfig, device_kind: str) -> None:
        super().__init__(RUNNER, backend_config(config, device_kind=device_kind))
        self.device_kind = device_kind

    def capabilities(self) -> BackendCapabilities:
        return dataclasses.replace(super().capabilities(), device_kind=self.device_kind)


async def verify_chains(device_kind: str, sizes: list[int], **options: Any) -> tuple[int, list[Any]]:
    """Welcome's max_tree_nodes, and the replies to a chain of each size below the prompt's root."""
    config = ServerConfig(port=0, **options)
    async with serving(ReportedDevice(config, device_kind), **options) as server:
        client, welcome = await opened(server)
        conversation = Conversation(PROMPT)
        await conversation.start(client)
        truth = reference(PROMPT, max(sizes) + 1)
        replies = [await client.verify(PROMPT[-1], DraftTree.chain(truth[:size])) for size in sizes]
        return welcome.capabilities.max_tree_nodes, replies


@pytest.mark.parametrize(("device_kind", "limit"), [("cpu", MAX_TREE_CPU), ("cuda", MAX_TREE_ACCELERATOR)])
def test_a_tree_up_to_the_devices_limit_is_verified_and_one_node_more_is_refused_naming_the_limit(
    device_kind: str, limit: int
) -> None:
    welcomed, (full, over) = run(verify_chains(device_kind, [limit, limit + 1]))

    assert welcomed == limit
    assert isinstance(full, Verified) and full.accepted.numel() == limit  # the target's own tokens: all kept
    assert isinstance(over, Error) and over.code is ErrorCode.TREE_TOO_LARGE and not over.fatal
    assert f"{limit + 1} nodes is over this server's limit of {limit}" in over.message


def test_max_tree_overrides_the_devices_limit_both_ways() -> None:
    cpu_raised, (cpu_reply,) = run(verify_chains("cpu", [100], max_tree=100))
    gpu_lowered, (gpu_reply,) = run(verify_chains("cuda", [17], max_tree=16))

    assert (cpu_raised, gpu_lowered) == (100, 16)
    assert isinstance(cpu_reply, Verified) and isinstance(gpu_reply, Error)


def test_each_devices_limit_admits_the_remote_engines_default_tree_for_that_device() -> None:
    assert verifier_shape("cpu").tree_total <= ServerConfig().tree_limit("cpu") == MAX_TREE_CPU
    assert verifier_shape("cuda").tree_total <= ServerConfig().tree_limit("cuda") == MAX_TREE_ACCELERATOR
    assert ServerConfig().tree_limit(None) == MAX_TREE_CPU  # a backend that does not say: a CPU
