"""moa-server's CPU default, the target with oneDNN-packed Linear layers, over a real loopback socket:
drafted rounds verify to exactly the packed target's own greedy output."""

from __future__ import annotations

import pytest
import torch

from drafts.decoding.autoregressive import generate_autoregressive
from drafts.decoding.config import DecodeConfig
from drafts.drafters.lookup import PromptLookupDrafter
from drafts.drafters.oracle import OracleDrafter
from drafts.target.packed_linear import PackedLinear, pack_linear_layers
from server_stub.backend.transformers_backend import TransformersBackend, TransformersBackendConfig
from tests.server_stub.remote_client import Conversation, RemoteClient
from tests.server_stub.serving import NEW_TOKENS, PROMPT, run, serving
from tests.tiny_drafts import tiny_llama, tiny_target_runner

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="needs oneDNN")


def test_rounds_verified_by_a_packed_target_on_loopback_equal_its_own_greedy_output() -> None:
    runner = tiny_target_runner(tiny_llama())
    pack_linear_layers(runner.model)
    assert any(isinstance(m, PackedLinear) for m in runner.model.modules())
    expected = generate_autoregressive(runner, PROMPT, DecodeConfig(max_new_tokens=NEW_TOKENS)).tokens
    oracle = OracleDrafter(expected)  # every drafted token right: each round verifies 5 positions at once
    oracle.begin(PROMPT)

    async def scenario() -> list[list[int]]:
        backend = TransformersBackend(runner, TransformersBackendConfig())
        async with serving(backend) as server:
            outputs = []
            for drafter in (oracle, PromptLookupDrafter()):
                client = await RemoteClient.connect(server.url)
                await client.hello(runner.fingerprint.to_dict())
                conversation = Conversation(list(PROMPT), drafter=drafter)
                await conversation.start(client)
                outputs.append(await conversation.run(client, NEW_TOKENS))
                await client.close()
            return outputs

    by_oracle, by_lookup = run(scenario())

    assert by_oracle == expected[: len(by_oracle)] and len(by_oracle) == NEW_TOKENS
    assert by_lookup == expected[: len(by_lookup)]
