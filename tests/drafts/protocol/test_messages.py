from __future__ import annotations

import dataclasses

import pytest
import torch

from drafts.acceptance import Acceptance
from drafts.errors import MalformedFrameError
from drafts.protocol.messages import (
    REPLY_TYPES,
    Bye,
    Cancel,
    Capabilities,
    Error,
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
from drafts.sampling import SamplingConfig
from drafts.target.activations import ActivationRequest
from drafts.tree import DraftTree
from tests.drafts.protocol.examples import hello, propose, verified, verify, welcome

ALL: list[type[Message]] = [
    Hello,
    Welcome,
    Prefill,
    Prefilled,
    Verify,
    Verified,
    Rewind,
    Rewound,
    Generate,
    Generated,
    Error,
    Bye,
    Cancel,
    Propose,
    Fetch,
    Fetched,
]


def test_every_message_type_has_exactly_one_message_class() -> None:
    assert sorted(cls.TYPE.value for cls in ALL) == sorted(t.value for t in MessageType)


def test_every_request_type_names_its_reply_type() -> None:
    assert REPLY_TYPES == {
        Prefill.TYPE: Prefilled.TYPE,
        Verify.TYPE: Verified.TYPE,
        Rewind.TYPE: Rewound.TYPE,
        Generate.TYPE: Generated.TYPE,
        Fetch.TYPE: Fetched.TYPE,
    }


def test_messages_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Rewind(1, 2).length = 3  # type: ignore[misc]


def test_a_verify_carries_a_draft_tree_there_and_back() -> None:
    tree = DraftTree((10, 20, 30), (0, 0, 1), torch.full((3, 5), 0.2))

    message = Verify.of(9, 4, tree, SamplingConfig())

    assert message.tree.tokens == tree.tokens and message.tree.parents == tree.parents
    assert message.tree.q is tree.q


def test_a_propose_carries_a_draft_tree_there_and_back() -> None:
    tree = DraftTree((10, 20, 30), (0, 0, 1), torch.full((3, 5), 0.2))

    message = Propose.of(9, 4, tree)

    assert (message.request_id, message.base) == (9, 4)
    assert message.tree.tokens == tree.tokens and message.tree.parents == tree.parents
    assert message.tree.q is tree.q


def test_a_verified_carries_an_acceptance_there_and_back() -> None:
    acceptance = Acceptance((1, 3), next_token=77)

    message = Verified.of(9, acceptance, committed=10, activations={"memory": torch.zeros(3, 4)})

    assert message.acceptance == acceptance
    assert message.timings == Timings()


def test_needs_carry_an_activation_request_there_and_back() -> None:
    request = ActivationRequest((0, 15, 30), all_layer_kv=True)

    assert Needs.of(request).request == request


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Prefill(1, torch.tensor([1.0, 2.0])), "prefill.tokens must be int64, got float32"),
        (lambda: Prefill(1, torch.tensor([[1, 2]])), r"prefill.tokens must have shape \(\*\)"),
        (lambda: Prefill(1, torch.tensor([-1])), "negative token ids"),
        (lambda: Prefill(-1, torch.tensor([1])), "request_id must be an int"),
        (lambda: dataclasses.replace(verify(), parents=torch.tensor([0, 2, 1])), "parents before their children"),
        (lambda: dataclasses.replace(verify(), parents=torch.tensor([0, 0])), r"parents must have shape \(3\)"),
        (lambda: dataclasses.replace(verify(), q=torch.ones(3, 16, dtype=torch.int64)), "verify.q must be float32"),
        (lambda: dataclasses.replace(verify(), q=torch.ones(2, 16)), r"verify.q must have shape \(3, \*\)"),
        (lambda: dataclasses.replace(verify(), q=-torch.ones(3, 16)), "probabilities >= 0"),
        (lambda: dataclasses.replace(verified(), accepted=torch.tensor([2, 1])), "increasing tree indices"),
        (lambda: dataclasses.replace(verified(), accepted=torch.tensor([0, 1])), "increasing tree indices"),
        (lambda: dataclasses.replace(verified(), activations={"kv": torch.zeros(2, 4)}), "expected 3: one per"),
        (lambda: Prefilled(1, 2, {"a": torch.zeros(2, 1), "b": torch.zeros(3, 1)}), "expected 2"),
        (lambda: Prefilled(1, 2, {"kv": torch.zeros(2, dtype=torch.bool)}), "float or int8"),
        (lambda: hello(resume_length=3), "resume_length needs resume_session"),
        (lambda: hello(draft_id=""), "draft_id is empty"),
        (lambda: hello(needs=Needs((1, 1))), "distinct"),
        (lambda: welcome(session_id=""), "session_id is empty"),
        (lambda: Capabilities(0, 1, 1, "float16", False), "max_context must be an int in \\[1"),
        (lambda: Timings(float("nan"), 0.0), "queue_ms must be a finite number"),
        (lambda: Generate(1, 2, 0, torch.tensor([0]), SamplingConfig()), "max_new_tokens must be an int in \\[1"),
        (lambda: Generate(1, 2, 8, torch.tensor([-2]), SamplingConfig()), "negative token ids"),
        (lambda: Generated(1, torch.tensor([1.5]), 3, done=True), "generated.tokens must be int64"),
        (lambda: Generated(1, torch.tensor([1]), 3, done=True, drafted=2), "generated.drafted is 2, more than"),
        (lambda: Generated(1, torch.tensor([1]), 3, done=True, drafted=-1), "generated.drafted must be an int"),
        (
            lambda: Generated(1, torch.tensor([1, 2]), 3, done=False, drafted=1, activations={"m": torch.zeros(3, 2)}),
            "generated.activations\\['m'\\] has 3 rows, expected 2",
        ),
        (lambda: dataclasses.replace(propose(), base=-1), "propose.base must be an int"),
        (lambda: dataclasses.replace(propose(), parents=torch.tensor([0, 2, 1])), "propose.parents\\[i\\] must be"),
        (lambda: dataclasses.replace(propose(), parents=torch.tensor([0, 0])), r"propose.parents must have shape"),
        (lambda: dataclasses.replace(propose(), tokens=torch.tensor([1, -2, 3])), "propose.tokens holds negative"),
        (lambda: dataclasses.replace(propose(), q=torch.ones(2, 16)), r"propose.q must have shape \(3, \*\)"),
        (lambda: dataclasses.replace(propose(), q=torch.full((3, 16), float("nan"))), "propose.q must hold finite"),
        (
            lambda: dataclasses.replace(propose(), q_indices=torch.zeros(3, 2, dtype=torch.int32)),
            "propose.q_indices and propose.q_weights go together",
        ),
    ],
)
def test_a_message_refuses_to_be_built_broken(build: object, match: str) -> None:
    with pytest.raises(MalformedFrameError, match=match):
        build()  # type: ignore[operator]
